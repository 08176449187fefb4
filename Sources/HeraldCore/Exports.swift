// Quiet hours are in the user's time zone: the rules come with the domain that applies them.
@_exported import ZoneInfo
