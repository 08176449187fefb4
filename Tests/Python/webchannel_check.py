"""Firestore's WebChannel (the web SDK's transport) in a real browser: serves Tests/Python/webchannel/
from its own loopback port (as Expo web or Vite would serve an app), opens it in Chromium (Playwright)
and runs one of its scripted sessions against a Firestore on another port; prints the result as JSON.

Usage: webchannel_check.py CHROMIUM BASE_URL PROJECT SESSION MODE
  SESSION  differential (listen, write, delete, leave a query, resume) or chatList (Bob's chat list
           while Alice writes, on herald dev --seed demo)
  MODE     streaming or longPolling
"""
import functools
import http.server
import json
import os
import sys
import threading
import time

from playwright.sync_api import sync_playwright


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript"}

    def log_message(self, *args):
        pass


def note(text):
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def main():
    chromium, base, project, session, mode = sys.argv[1:6]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "webchannel")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page_url = f"http://localhost:{server.server_address[1]}/index.html" + ("?trace" if os.environ.get("WEBCHANNEL_TRACE") else "")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        console = []
        page.on("console", lambda m: (console.append(m.text), os.environ.get("WEBCHANNEL_TRACE") and note(m.text)))
        note("browser up")
        page.goto(page_url)
        page.wait_for_function("document.title === 'ready'", timeout=30000)
        try:
            result = page.evaluate(
                "([s, base, project, longPolling]) => window.sessions[s](base, project, longPolling)",
                [session, base, project, mode == "longPolling"])
        except Exception as error:
            print(json.dumps({"error": str(error)[:4000], "console": console[-20:]}))
            sys.exit(1)
        finally:
            note("session done; the page said:\n" + "\n".join(console[-40:]))
            browser.close()
            note("browser closed")
    result["pageOrigin"] = page_url.split("/index.html")[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
