"""Google's Firebase JS SDK (the vendored, unmodified 12.17.0) in Chromium against herald dev: serves
Tests/Python/firebase_sdk/ with the SDK's files beside it from its own loopback port (as an Expo web or
Vite app would be served), runs one of its sessions and prints the result as JSON.

Usage: firebase_sdk_check.py CHROMIUM SDK_DIR BASE_URL PROJECT SESSION
  SESSION  signIn (then the page is reloaded and `restored` runs in it), chat, chatLongPolling, passwordReset
"""
import functools
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

from playwright.sync_api import sync_playwright


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript"}

    def log_message(self, *args):
        pass


def main():
    chromium, sdk, base, project, session = sys.argv[1:6]
    root = tempfile.mkdtemp(prefix="herald-sdk-page-")
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "firebase_sdk")
    for name in ("index.html", "sessions.js"):
        shutil.copy(os.path.join(here, name), root)
    for name in ("firebase-app.js", "firebase-auth.js", "firebase-firestore.js"):
        os.symlink(os.path.join(sdk, name), os.path.join(root, name))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page_url = f"http://localhost:{server.server_address[1]}/index.html"
    result = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        context = browser.new_context()
        # Nothing leaves this machine (the SDK probes the network after a failed channel).
        context.route("**/*", lambda route: route.abort() if not route.request.url.startswith(("http://localhost", "http://127.0.0.1")) else route.continue_())
        page = context.new_page()
        console = []
        page.on("console", lambda m: console.append(m.text))
        page.goto(page_url)
        page.wait_for_function("document.title === 'ready'", timeout=30000)
        try:
            result = page.evaluate("([s, base, project]) => window.sessions[s](base, project)", [session, base, project])
            if session == "signIn":
                page.reload()
                page.wait_for_function("document.title === 'ready'", timeout=30000)
                result["restored"] = page.evaluate("([base, project]) => window.sessions.restored(base, project)", [base, project])
        except Exception as error:
            print(json.dumps({"error": str(error)[:4000], "console": console[-20:]}))
            sys.exit(1)
        finally:
            browser.close()
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
