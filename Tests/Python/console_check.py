"""Drives herald dev's browser console in a real Chromium (Playwright), as a person would.

Usage: console_check.py BASE_URL SCREENSHOT_DIR CHROMIUM DEAD_DELIVERY_ID

Expects `herald dev --seed demo` at BASE_URL with one dead letter (DEAD_DELIVERY_ID) whose trigger now
answers. Sends a message with the composer, follows its path, Bob's phone, the conversation's new
fields; edits a document and sees its trigger fire; opens the conversation as Bob; replays the dead
letter; shows text a client wrote (markup, a script) as text; saves a screenshot of each view (light), and of Events and Firestore in dark at 1400 and 900 px. Exits non-zero with the reason on failure.
"""
import json
import os
import sys
import time

from playwright.sync_api import expect, sync_playwright

base, shots, chromium, dead_id = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
os.makedirs(shots, exist_ok=True)
TIMEOUT = 30_000


def newest_delivery(page):
    return max(d["id"] for d in page.request.get(base + "/herald/deliveries").json()["deliveries"])


def wait_for_event(page, events, after):
    """The newest of `events` (a locator of .event items) once it is newer than delivery #after, by id."""
    deadline = time.monotonic() + TIMEOUT / 1000
    while time.monotonic() < deadline:
        newest = events.first
        if newest.count() and int(newest.get_attribute("id").split("-")[1]) > after:
            return page.locator(f"#{newest.get_attribute('id')}")
        page.wait_for_timeout(100)
    page.screenshot(path=f"{shots}/failure.png", full_page=True)
    shown = page.evaluate("state.view")
    ids = page.locator(".event").evaluate_all("items => items.slice(0, 8).map(i => i.id + ' ' + i.dataset.document)")
    raise AssertionError(f"no event newer than #{after}; view {shown}, newest events {ids}")


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT)
        expect.set_options(timeout=TIMEOUT)
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        # A 404 is an answer the page handles (a document deleted while it was being drawn); Chrome still
        # logs it. What counts: script errors, other console errors, and any 5xx from the local cloud.
        page.on("console", lambda message: errors.append(message.text)
                if message.type == "error" and "status of 404" not in message.text else None)
        page.on("response", lambda response: errors.append(f"{response.status} {response.url}") if response.status >= 500 else None)

        page.goto(base + "/")
        expect(page.locator("#live")).to_have_text("live")
        expect(page.locator("#project")).to_have_text("project e2e")

        # The composer: Alice writes to Family.
        page.select_option("#action-send-from", "alice")
        page.select_option("#action-send-conversation", "family")
        page.fill("#action-send-text", "Dinner at 6pm")
        page.keyboard.press("Enter")
        sent = page.locator(".event[data-document^='conversations/family/messages/']").filter(has_text="onMessageCreated")
        expect(sent).to_have_attribute("data-outcome", "applied")
        sent.locator("button").first.click()
        path = sent.locator(".path")
        expect(path).to_contain_text("conversations/family")
        expect(path).to_contain_text("Bob's phone")
        expect(path).to_contain_text("Bob's iPad")
        expect(path).to_contain_text("Carol's phone")
        expect(path).not_to_contain_text("Alice's phone")
        # The function's spans (exported over OTLP to the local cloud): the event, and its calls under it.
        expect(sent.locator(".spans")).to_contain_text("onMessageCreated event")
        # One push by each service: FCM for Bob's phone, APNs for Bob's iPad, Expo's service for Carol's phone.
        expect(sent.locator(".span[data-kind='client']").filter(has_text="messages:send")).to_have_count(1)
        expect(sent.locator(".span[data-kind='client']").filter(has_text="POST /3/device")).to_have_count(1)
        expect(sent.locator(".span[data-kind='client']").filter(has_text="POST push/send")).to_have_count(1)
        page.screenshot(path=f"{shots}/events.png", full_page=True)
        # At 900 px the opened event's stages wrap, and no path runs past its card.
        page.set_viewport_size({"width": 900, "height": 900})
        overflowing = page.evaluate("[...document.querySelectorAll('.path .stage')].filter((s) => s.scrollWidth > s.clientWidth + 1).length")
        assert overflowing == 0, f"{overflowing} stages overflow at 900 px"
        page.screenshot(path=f"{shots}/events-900.png", full_page=True)
        page.set_viewport_size({"width": 1400, "height": 900})
        overflowing = page.evaluate("[...document.querySelectorAll('.path .stage')].filter((s) => s.scrollWidth > s.clientWidth + 1).length")
        assert overflowing == 0, f"{overflowing} stages overflow at 1400 px"

        # The filter: one function, one outcome, a text in the path or the reason; then everything again.
        events = page.locator("#events .event")
        page.select_option("#event-filter [name=function]", "tokenCleanup")
        expect(page.locator("#events .event:not([data-document^='users/'])")).to_have_count(0)
        expect(events.first).to_be_visible()
        page.select_option("#event-filter [name=function]", "")
        page.select_option("#event-filter [name=outcome]", "applied")
        expect(page.locator("#events .event:not([data-outcome='applied'])")).to_have_count(0)
        expect(events.first).to_be_visible()
        page.fill("#event-filter [name=search]", "conversations/family/messages")
        expect(events).to_have_count(1)
        expect(page.locator("#event-count")).to_contain_text("1 of ")
        page.fill("#event-filter [name=search]", "no such path")
        expect(page.locator("#events")).to_contain_text("No event matches the filter.")
        page.fill("#event-filter [name=search]", "")
        page.select_option("#event-filter [name=outcome]", "")
        expect(sent).to_be_visible()
        page.evaluate("document.activeElement.blur()")

        # Logs: the functions' own lines; the one about the message links to its event.
        page.keyboard.press("7")
        applied = page.locator(".log[data-log-function='onMessageCreated']").filter(has_text="applied 4 writes, 3 pushes")
        expect(applied.first).to_be_visible()
        page.select_option("#log-filter [name=function]", "tokenCleanup")
        expect(page.locator(".log:not([data-log-function='tokenCleanup'])")).to_have_count(0)
        page.select_option("#log-filter [name=function]", "")
        page.screenshot(path=f"{shots}/logs.png", full_page=True)
        applied.first.locator(".event-link").click()
        expect(page.locator("#view-events")).to_be_visible()
        expect(sent.locator(".path")).to_be_visible()
        page.evaluate("document.activeElement.blur()")

        # Devices: what Bob's phone shows.
        page.keyboard.press("3")
        bob = page.locator(".phone[data-token='tok-bob-phone']")
        expect(bob).to_contain_text("Bob's phone")
        expect(bob.locator(".note").first).to_contain_text("Family • Alice: Dinner at 6pm")
        expect(bob.locator(".note").first).to_contain_text("Dinner at 6pm")
        page.screenshot(path=f"{shots}/devices.png", full_page=True)

        # Firestore: the conversation's denormalized fields.
        page.keyboard.press("2")
        page.click("[data-collection='conversations']")
        page.click("[data-path='conversations/family']")
        expect(page.locator("#document tr[data-field='lastMessage']")).to_contain_text("Dinner at 6pm")
        expect(page.locator("#document tr[data-field='unreadCount']")).to_contain_text('"bob": 1')
        page.screenshot(path=f"{shots}/firestore.png", full_page=True)

        # The composer again: Bob opens Family, and his unread count goes back to 0, live.
        page.select_option("#action-open-reader", "bob")
        page.select_option("#action-open-conversation", "family")
        page.click("[data-action='open'] button")
        expect(page.locator("#document tr[data-field='unreadCount']")).to_contain_text('"bob": 0')

        # Edit a document (typed: an integer field) and see its trigger fire.
        page.click("[data-collection='users']")
        page.click("[data-path='users/carol']")
        # Until Carol's document is drawn, the panel still shows Family's, and Edit would edit that.
        expect(page.locator("#document h2[data-path='users/carol']")).to_be_visible()
        last_id = newest_delivery(page)
        page.click("#document button:has-text('Edit')")
        page.click("#document button:has-text('Add field')")
        row = page.locator("#document tbody tr").last
        row.locator("[name=name]").fill("shoeSize")
        row.locator("[name=type]").select_option("integer")
        row.locator("[name=value]").fill("38")
        page.click("#document button:has-text('Save')")
        expect(page.locator("#document tr[data-field='shoeSize']")).to_contain_text("integer")
        page.keyboard.press("1")
        # The edit's event: the first on users/carol newer than every event before the save.
        edited = wait_for_event(page, page.locator(".event[data-document='users/carol']"), after=last_id)
        expect(edited).to_contain_text("tokenCleanup")
        edited.locator("button").first.click()
        expect(edited.locator(".path")).to_contain_text("by a client or person")
        expect(edited).not_to_have_attribute("data-outcome", "pending")

        # Create a document (auto id) and delete it again.
        page.keyboard.press("2")
        page.click("#new-document")
        page.fill("#document [name=path]", "notes")
        page.locator("#document tbody tr").first.locator("[name=name]").fill("title")
        page.locator("#document tbody tr").first.locator("[name=value]").fill("Shopping")
        page.click("#document button:has-text('Save')")
        created = page.locator("#document h2[data-path^='notes/']")
        expect(created).to_be_visible()
        expect(page.locator("#document tr[data-field='title']")).to_contain_text("Shopping")
        note = created.get_attribute("data-path")
        assert page.request.get(f"{base}/v1/projects/e2e/databases/(default)/documents/{note}").ok
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#document button:has-text('Delete')")
        expect(page.locator(f"[data-path='{note}']")).to_have_count(0)
        assert page.request.get(f"{base}/v1/projects/e2e/databases/(default)/documents/{note}").status == 404

        # A typed query.
        page.keyboard.press("/")
        page.keyboard.type("messages where senderId == alice limit 5")
        page.keyboard.press("Enter")
        expect(page.locator("#query-results")).to_contain_text("Dinner at 6pm")
        # One row per document, one column per field (the text its own cell, not a line of every field).
        results = page.locator("#query-results")
        expect(results.locator("thead th")).to_contain_text(["document", "senderId", "text"])
        expect(results.locator("td[data-field='text']").filter(has_text="Dinner at 6pm")).to_have_count(1)
        expect(results.locator("td[data-field='senderId']").first).to_have_text("alice")
        page.screenshot(path=f"{shots}/query.png", full_page=True)

        # Deliveries: replay the dead letter; its trigger answers now.
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("4")
        dead = page.locator(f"#dead tr[data-delivery='{dead_id}']")
        expect(dead).to_contain_text("probe")
        sweep = page.locator("#jobs tr[data-job='presence-sweep']")
        sweep.locator("button:has-text('Run now')").click()
        expect(sweep).to_contain_text("→ 200")
        page.screenshot(path=f"{shots}/deliveries.png", full_page=True)
        dead.locator("button:has-text('Replay')").click()
        expect(dead).to_have_count(0)
        page.keyboard.press("1")
        expect(page.locator(f"#event-{dead_id}")).to_have_attribute("data-outcome", "delivered")

        # Faults and load.
        page.keyboard.press("5")
        expect(page.locator("#requests")).to_contain_text("firestore")
        expect(page.locator("#api-faults fieldset")).to_have_count(3)
        page.screenshot(path=f"{shots}/faults.png", full_page=True)

        # Every delivery sent twice, from the controls: the copy finds the event already applied.
        page.fill("#delivery-faults [name=duplicateProbability]", "1")
        page.click("#delivery-faults button:has-text('Apply')")
        expect(page.locator("#toast")).to_contain_text("delivery faults applied")
        page.evaluate("document.activeElement.blur()")
        last_id = newest_delivery(page)
        page.fill("#action-send-text", "Twice?")
        page.keyboard.press("Enter")
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("1")
        last_message = wait_for_event(page, page.locator(".event").filter(has_text="onMessageCreated"), after=last_id)
        expect(last_message).to_have_attribute("data-outcome", "applied")
        last_message.locator("button").first.click()
        expect(last_message.locator(".path")).to_contain_text("injected: attempt 1: duplicate, answered 200")
        pushes = page.request.get(f"{base}/herald/fcm/messages?token=tok-bob-phone").json()["messages"]
        assert sum(1 for p in pushes if p["message"].get("notification", {}).get("body", "").endswith(": Twice?")) == 1, "the duplicate sent a second push"

        # Functions: their own figures, from /metrics.
        page.keyboard.press("6")
        created = page.locator("[data-function='onMessageCreated']")
        expect(created).to_contain_text("applied")
        expect(created).to_contain_text("duplicate")  # the copy of "Twice?"
        expect(created).to_contain_text("sent 6")  # three phones, two messages: the copy sent nothing
        expect(page.locator("[data-function='onReadReceipt']")).to_contain_text("events")
        page.screenshot(path=f"{shots}/functions.png", full_page=True)

        # Users: the demo's people, who sign in with a password; disable one, then enable it again.
        page.keyboard.press("8")
        alice = page.locator("#users tr[data-uid='alice']")
        expect(alice).to_contain_text("alice@example.com")
        expect(alice).to_contain_text("password")
        expect(page.locator("#users tr[data-uid]")).to_have_count(5)
        alice.locator("button:has-text('Disable')").click()
        expect(alice.locator("button:has-text('Enable')")).to_be_visible()
        signin = page.request.post(f"{base}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=k",
                                   data={"email": "alice@example.com", "password": "herald-demo"})
        assert signin.status == 400 and "USER_DISABLED" in signin.text(), signin.text()
        alice.locator("button:has-text('Enable')").click()
        expect(alice.locator("button:has-text('Disable')")).to_be_visible()
        signin = page.request.post(f"{base}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=k",
                                   data={"email": "alice@example.com", "password": "herald-demo"})
        assert signin.status == 200, signin.text()
        page.screenshot(path=f"{shots}/users.png", full_page=True)

        # Text any client writes is shown as text: markup stays literal and no script runs.
        name = '<img src=x onerror="window.__pwned=1">Mallory'
        text = '<script>window.__pwned=2</script><b>bold?</b>'
        # The users collection is open in the tree since Carol's edit: the new document shows up there.
        page.keyboard.press("2")
        mallory = page.request.patch(
            f"{base}/v1/projects/e2e/databases/(default)/documents/users/mallory",
            data=json.dumps({"fields": {"displayName": {"stringValue": name}, "bio": {"stringValue": text}}}),
            headers={"content-type": "application/json"})
        assert mallory.ok, mallory.text()
        page.click("[data-path='users/mallory']")
        expect(page.locator("#document tr[data-field='displayName']")).to_contain_text(name)
        expect(page.locator("#document tr[data-field='bio']")).to_contain_text(text)
        assert page.evaluate("window.__pwned === undefined"), "a stored text ran as script"
        assert page.locator("img[src='x'], b:has-text('bold?')").count() == 0, "a stored text was drawn as markup"

        # Dark.
        # Dark.
        page.emulate_media(color_scheme="dark")
        page.keyboard.press("1")
        page.locator(".event button").first.click()
        page.screenshot(path=f"{shots}/events-dark.png", full_page=True)
        page.set_viewport_size({"width": 900, "height": 900})
        overflowing = page.evaluate("[...document.querySelectorAll('.path .stage')].filter((s) => s.scrollWidth > s.clientWidth + 1).length")
        assert overflowing == 0, f"{overflowing} stages overflow at 900 px, dark"
        page.screenshot(path=f"{shots}/events-dark-900.png", full_page=True)
        page.keyboard.press("2")
        page.click("[data-path='conversations/family']")
        page.screenshot(path=f"{shots}/firestore-dark-900.png", full_page=True)
        page.fill("#query-text", "messages where senderId == alice")
        page.press("#query-text", "Enter")
        expect(page.locator("#query-results td[data-field='text']").first).to_be_visible()
        wide = page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth + 1")
        assert not wide, "the query's results widen the page at 900 px (they scroll in their own box)"
        page.screenshot(path=f"{shots}/query-dark-900.png", full_page=True)

        browser.close()
        if errors:
            raise AssertionError(f"errors in the page: {errors}")
        print(json.dumps({"ok": True, "screenshots": sorted(os.listdir(shots))}))


if __name__ == "__main__":
    main()
