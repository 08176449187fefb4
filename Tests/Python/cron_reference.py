"""The next runs of unix-cron schedules by croniter, the reference for herald dev's scheduler.

Reads JSON lines {"expression": "...", "after": UNIX_SECONDS, "count": N} from stdin and writes, for
each, a JSON line {"next": [UNIX_SECONDS, ...]} or {"error": "..."} when croniter refuses the schedule
or finds no date for it.
"""

import json
import sys
from datetime import datetime, timezone

from croniter import croniter, CroniterBadDateError


def main() -> None:
    for line in sys.stdin:
        case = json.loads(line)
        try:
            runs = croniter(case["expression"], datetime.fromtimestamp(case["after"], timezone.utc), day_or=True)
            found = [int(runs.get_next(datetime).timestamp()) for _ in range(case["count"])]
            print(json.dumps({"next": found}))
        except CroniterBadDateError as error:
            print(json.dumps({"error": "no date: %s" % error}))
        except Exception as error:  # croniter refuses the expression
            print(json.dumps({"error": "%s: %s" % (type(error).__name__, error)}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
