// The console's views besides Firestore: each event's path, the phones, deliveries and jobs, faults,
// the functions' figures. Loaded after console.js, whose helpers they use.
"use strict";

// MARK: Events: write → trigger → function → writes → pushes

function outcome(event) {
  if (event.state === "dead") return ["failed", "dead letter: " + (event.lastError || "")];
  if (event.state === "in_flight") return ["pending", "being delivered"];
  if (event.state === "delivered") return [event.answer?.outcome || "delivered", event.answer?.reason || ""];
  if (event.attempts > 0) return ["retrying", event.lastError || ""];
  return ["pending", "waiting for its first attempt"];
}

function deviceLabel(token) { return state.world?.devices?.[token] || token; }

// A push as its service took it: FCM's message, Expo's message (title, body, badge at the top) or APNs's payload (aps).
function pushSummary(message) {
  const aps = message.apns?.payload?.aps ?? message.aps;
  const badge = aps?.badge ?? message.android?.notification?.notification_count ?? message.badge ?? message.data?.badge;
  const expo = message.title !== undefined || message.body !== undefined ? { title: message.title, body: message.body } : null;
  const notification = message.notification || aps?.alert || expo;
  return { title: notification?.title, body: notification?.body, badge, silent: !notification, reason: message.data?.reason ?? message.reason };
}

const serviceNames = { fcm: "FCM", expo: "Expo", apns: "APNs" };

// Herald's own bookkeeping (the exactly-once ledger) is shown quieter and shorter.
function documentLink(path) {
  const ledger = path.startsWith("_herald/");
  const text = ledger && path.length > 30 ? path.slice(0, 28) + "…" : path;
  return el("a", { href: "#firestore", title: path, class: "mono" + (ledger ? " ledger" : ""), onclick: (e) => { e.preventDefault(); openDocument(path); } }, text);
}

function eventPath(event) {
  const kind = event.eventType.split(".").pop();
  const [result, reason] = outcome(event);
  const cause = event.cause?.deliveryId
    ? el("a", { href: `#event-${event.cause.deliveryId}`, onclick: (e) => { e.preventDefault(); focusEvent(event.cause.deliveryId); } },
      `by event #${event.cause.deliveryId} (${event.cause.trigger})`)
    : event.cause?.job ? `by the job ${event.cause.job}` : event.writer ? `written by ${event.writer}` : "by a client or person";
  const calls = Object.entries(event.calls || {}).map(([api, n]) => `${api} ${n}`).join(", ");
  const writes = event.writes || [];
  return el("div", { class: "path" },
    el("div", { class: "stage" }, el("h3", {}, "Write"), documentLink(event.document), el("div", {}, `${kind}, `, cause)),
    el("div", { class: "stage" }, el("h3", {}, "Trigger"), el("div", {}, event.trigger),
      el("div", { class: "muted" }, `attempt ${Math.max(event.attempts, 1)} · event ${event.eventId.slice(0, 8)}`),
      event.deliveryFaults ? el("div", { class: "muted" }, "injected: " + event.deliveryFaults) : null),
    el("div", { class: "stage" }, el("h3", {}, "Function"), el("span", { class: `badge ${result}` }, result),
      reason ? el("div", { class: "muted" }, reason) : null,
      event.latencyMs !== null ? el("div", { class: "muted" }, `${event.latencyMs} ms`) : null,
      calls ? el("div", { class: "muted" }, `calls: ${calls}`) : null,
      (event.injected || []).length ? el("div", { class: "muted" }, "faults in its calls: " + event.injected.join(", ")) : null),
    el("div", { class: "stage" }, el("h3", {}, `Writes (${writes.length})`),
      writes.length ? el("ul", {}, writes.map((w) => el("li", {}, documentLink(w.document), ` ${w.kind}`))) : el("span", { class: "muted" }, "none")),
    el("div", { class: "stage" }, el("h3", {}, `Pushes (${(event.pushes || []).length})`),
      (event.pushes || []).length
        ? el("ul", {}, event.pushes.map((push) => {
          const summary = pushSummary(push.message);
          return el("li", {}, el("a", { href: "#devices", onclick: (e) => { e.preventDefault(); state.highlight = push.token; show("devices"); } }, deviceLabel(push.token || push.message.topic || "?")),
            summary.silent ? ` silent, badge ${summary.badge ?? "–"}` : `: ${[summary.title, summary.body].filter(Boolean).join(" — ")}`);
        }))
        : el("span", { class: "muted" }, "none")));
}

function focusEvent(id) {
  state.openEvents.add(id);
  show("events");
  setTimeout(() => document.getElementById(`event-${id}`)?.scrollIntoView({ block: "center" }), 200);
}

// The spans the function exported for the event's trace, as a waterfall: what took the time.
function spanWaterfall(spans) {
  if (!spans?.length) return null;
  const start = Math.min(...spans.map((s) => Number(s.startTimeUnixNano)));
  const end = Math.max(...spans.map((s) => Number(s.endTimeUnixNano)));
  const total = Math.max(end - start, 1);
  return el("div", { class: "spans" }, el("h3", {}, `Spans (${spans.length})`),
    el("ol", {}, spans.map((span) => {
      const from = Number(span.startTimeUnixNano) - start;
      const took = Number(span.endTimeUnixNano) - Number(span.startTimeUnixNano);
      const status = span.attributes?.["http.response.status_code"];
      // Through the style object: the page's CSP allows no style attributes.
      const fill = el("span", {});
      fill.style.marginLeft = `${(from / total) * 100}%`;
      fill.style.width = `${Math.max((took / total) * 100, 0.5)}%`;
      return el("li", { class: `span ${span.kind}${span.status === "error" ? " error" : ""}`, "data-kind": span.kind },
        el("span", { class: "name mono", title: span.spanId }, span.name + (status ? ` → ${status}` : "")),
        el("span", { class: "bar" }, fill),
        el("span", { class: "took" }, `${(took / 1e6).toFixed(1)} ms`));
    })));
}

// What the filter above the list keeps: one function, one outcome, a text in the path or the reason.
function eventMatches(event, filter) {
  const [result, reason] = outcome(event);
  const search = filter.search.trim().toLowerCase();
  return (!filter.function || event.trigger === filter.function) && (!filter.outcome || result === filter.outcome)
    && (!search || event.document.toLowerCase().includes(search) || (reason || "").toLowerCase().includes(search));
}

async function renderEvents() {
  const { events: all } = await api("/herald/console/events?limit=150");
  const functions = $("#event-filter [name=function]");
  for (const name of new Set(all.map((e) => e.trigger))) {
    if (![...functions.options].some((option) => option.value === name)) functions.append(el("option", { value: name }, name));
  }
  const events = all.filter((event) => eventMatches(event, state.eventFilter));
  $("#event-count").textContent = events.length === all.length ? `${all.length} events` : `${events.length} of ${all.length} events`;
  // Spans only for the events shown open, fetched together.
  const spans = Object.fromEntries(await Promise.all(events.filter((e) => state.openEvents.has(e.id) && e.traceId)
    .map(async (e) => [e.id, (await api(`/herald/traces/${e.traceId}`)).spans])));
  const list = $("#events");
  list.replaceChildren(...events.map((event) => {
    const [result] = outcome(event);
    const open = state.openEvents.has(event.id);
    const item = el("li", { class: "event", id: `event-${event.id}`, "data-document": event.document, "data-outcome": result },
      el("button", {
        type: "button", "aria-expanded": String(open),
        onclick: () => { open ? state.openEvents.delete(event.id) : state.openEvents.add(event.id); refresh(); },
      },
      el("span", { class: "time" }, time(event.createdAt)), el("span", {}, event.trigger), el("span", { class: "doc mono" }, event.document),
      el("span", { class: `badge ${result}` }, result), el("span", { class: "latency" }, event.latencyMs === null ? "" : `${event.latencyMs} ms`)));
    if (open) item.append(eventPath(event), spanWaterfall(spans[event.id]) || "");
    return item;
  }));
  if (!all.length) list.append(el("li", { class: "muted" }, "No events yet. Write a document, or use the app's actions above."));
  else if (!events.length) list.append(el("li", { class: "muted" }, "No event matches the filter."));
}

// MARK: Devices

async function renderDevices() {
  const { devices } = await api("/herald/console/devices");
  const grid = $("#devices");
  grid.replaceChildren(...devices.map((device) => el("article", { class: "phone" + (device.token === state.highlight ? " highlight" : ""), "data-token": device.token },
    el("header", {}, el("strong", {}, device.label || "Unknown device"), el("span", { class: "service" }, serviceNames[device.service] || device.service),
      el("span", { class: "mono" }, device.token),
      device.dead ? el("div", { class: "dead" }, "token unregistered") : null),
    device.pushes.length ? device.pushes.map((push) => {
      const summary = pushSummary(push.message);
      if (summary.silent) {
        return el("div", { class: "note silent" }, `${time(push.receivedAt)} · badge ${summary.badge ?? "–"}${summary.reason ? ` · ${summary.reason}` : ""}`);
      }
      return el("div", { class: "note" },
        el("div", { class: "meta" }, el("span", {}, time(push.receivedAt)), summary.badge !== undefined ? el("span", { class: "badge-count" }, summary.badge) : null),
        summary.title ? el("strong", {}, summary.title) : null, el("div", {}, summary.body || ""));
    }) : el("p", { class: "muted" }, "Nothing yet."))));
  if (!devices.length) grid.append(el("p", { class: "muted" }, "No pushes yet."));
  if (state.highlight) $(`.phone.highlight`)?.scrollIntoView({ block: "nearest" });
}

// MARK: Users

async function renderUsers() {
  const { users, links } = await api("/herald/console/users");
  const act = async (uid, action) => {
    try { await api(`/herald/console/users/${encodeURIComponent(uid)}:${action}`, { method: "POST" }); await renderUsers(); } catch (error) { toast(error.message, true); }
  };
  table($("#users"), ["email", "name", "uid", "signs in with", "created", "last sign-in", ""], users.map((user) =>
    el("tr", { "data-uid": user.uid }, el("td", {}, user.email || "(anonymous)"), el("td", {}, user.displayName || ""), el("td", { class: "mono" }, user.uid),
      el("td", {}, user.method + (user.emailVerified ? ", verified" : "")), el("td", {}, time(user.createdAt / 1000)),
      el("td", {}, user.lastLoginAt ? time(user.lastLoginAt / 1000) : "never"),
      el("td", {}, el("button", { type: "button", onclick: () => act(user.uid, user.disabled ? "enable" : "disable") }, user.disabled ? "Enable" : "Disable"), " ",
        el("button", { type: "button", onclick: () => act(user.uid, "delete") }, "Delete")))), "No users yet: an app's sign-up makes one.");
  table($("#links"), ["for", "what", "link"], links.map((link) =>
    el("tr", {}, el("td", {}, link.email), el("td", {}, link.kind === "PASSWORD_RESET" ? "password reset" : "email verification"),
      el("td", {}, el("a", { href: link.link, target: "_blank", rel: "noopener" }, "open")))), "No link waiting.");
}

// MARK: Deliveries and the scheduler

function table(node, headers, rows, empty) {
  node.replaceChildren(el("tr", {}, headers.map((h) => el("th", {}, h))), ...(rows.length ? rows : [el("tr", {}, el("td", { class: "empty", colspan: headers.length }, empty))]));
}

async function renderDeliveries() {
  const [pending, dead, jobs] = await Promise.all([api("/herald/deliveries?state=pending"), api("/herald/deliveries?state=dead"), api("/herald/console/jobs")]);
  table($("#pending"), ["#", "trigger", "document", "attempts", "last error"], pending.deliveries.map((d) =>
    el("tr", {}, el("td", {}, d.id), el("td", {}, d.trigger), el("td", { class: "mono" }, d.document), el("td", {}, d.attempts), el("td", {}, d.lastError || ""))), "Nothing waiting.");
  table($("#dead"), ["#", "trigger", "document", "attempts", "last error", ""], dead.deliveries.map((d) =>
    el("tr", { "data-delivery": d.id }, el("td", {}, d.id), el("td", {}, d.trigger), el("td", { class: "mono" }, d.document), el("td", {}, d.attempts), el("td", {}, d.lastError || ""),
      el("td", {}, el("button", { type: "button", onclick: () => replay(d.id) }, "Replay")))), "No dead letters.");
  table($("#jobs"), ["job", "schedule", "next run", "last run", ""], jobs.jobs.map((job) =>
    el("tr", { "data-job": job.name }, el("td", {}, job.name), el("td", { class: "mono" }, job.schedule), el("td", {}, job.paused ? "paused" : job.nextRun ? new Date(job.nextRun * 1000).toLocaleString([], { hour12: false }) : ""),
      el("td", {}, job.lastRun ? `${time(job.lastRun.at)} → ${job.lastRun.status ?? "no answer"}${job.lastRun.error ? `: ${job.lastRun.error}` : ""}` : "not yet"),
      el("td", {}, el("button", { type: "button", onclick: () => runJob(job.name) }, "Run now")))), "No jobs.");
}

async function replay(id) {
  try { await api(`/herald/deliveries/${id}:replay`, { method: "POST", body: {} }); toast(`event #${id} replayed`); refresh(); } catch (error) { toast(error.message, true); }
}

async function runJob(name) {
  try {
    const result = await api(`/herald/scheduler/jobs/${encodeURIComponent(name)}:run`, { method: "POST", body: {} });
    toast(`${name}: ${result.status ?? "no answer"}${result.error ? ` ${result.error}` : ""}`, !(result.status >= 200 && result.status < 300));
    refresh();
  } catch (error) { toast(error.message, true); }
}

// MARK: Faults and load

const faultKinds = ["unavailable", "rateLimited", "reset", "resetAfterApplying", "timeout", "slow"];

function numberField(label, name, value, step = "0.05") {
  return el("label", {}, label, el("input", { type: "number", name, value, min: "0", step }));
}

async function renderFaults() {
  const faults = await api("/herald/console/faults");
  table($("#requests"), ["API", "requests"], Object.entries(faults.requests).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v))), "None yet.");
  table($("#injected"), ["fault", "count"], Object.entries(faults.api.injected).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v))), "None.");
  const apiForm = $("#api-faults");
  if (apiForm.contains(document.activeElement) || $("#delivery-faults").contains(document.activeElement)) return;
  const plan = faults.api.plan;
  apiForm.replaceChildren(el("h2", {}, "Calls to Google"),
    numberField("Fault rate (0–1)", "rate", plan.rate),
    ...["firestore", "fcm", "token"].map((api) => el("fieldset", {}, el("legend", {}, api),
      el("div", { class: "kinds" }, faultKinds.map((kind) => el("label", {}, el("input", { type: "checkbox", name: `${api}.${kind}`, checked: (plan.kinds[api] || []).includes(kind) }), kind))))),
    numberField("Hang (ms)", "hangMilliseconds", plan.hangMilliseconds, "100"),
    numberField("Slow (ms)", "slowMilliseconds", plan.slowMilliseconds, "100"),
    numberField("FCM sink failure rate", "fcmRate", faults.fcm.rate),
    el("div", { class: "buttons" }, el("button", { type: "submit", class: "primary" }, "Apply")));
  apiForm.onsubmit = async (event) => {
    event.preventDefault();
    const data = new FormData(apiForm);
    const kinds = {};
    for (const api of ["firestore", "fcm", "token"]) kinds[api] = faultKinds.filter((kind) => data.get(`${api}.${kind}`));
    try {
      await api("/herald/faults", { method: "PUT", body: { rate: Number(data.get("rate")), kinds, hangMilliseconds: Number(data.get("hangMilliseconds")), slowMilliseconds: Number(data.get("slowMilliseconds")) } });
      await api("/herald/fcm/faults", { method: "POST", body: { rate: Number(data.get("fcmRate")) } });
      toast("fault plan applied");
    } catch (error) { toast(error.message, true); }
  };
  const delivery = faults.delivery;
  const deliveryForm = $("#delivery-faults");
  deliveryForm.replaceChildren(el("h2", {}, "Event delivery"),
    numberField("Duplicate probability", "duplicateProbability", delivery.duplicateProbability),
    numberField("Drop answer probability", "dropResponseProbability", delivery.dropResponseProbability),
    numberField("Omit data probability", "omitDataProbability", delivery.omitDataProbability),
    numberField("Maximum delay (ms)", "maximumDelayMilliseconds", delivery.maximumDelayMilliseconds, "100"),
    el("div", { class: "buttons" }, el("button", { type: "submit", class: "primary" }, "Apply")));
  deliveryForm.onsubmit = async (event) => {
    event.preventDefault();
    const data = Object.fromEntries([...new FormData(deliveryForm)].map(([k, v]) => [k, Number(v)]));
    try { await api("/herald/delivery/faults", { method: "POST", body: data }); toast("delivery faults applied"); } catch (error) { toast(error.message, true); }
  };
}

// MARK: Functions (their /metrics, read by the app that runs them)

async function renderFunctions() {
  const { functions } = await api("/herald/console/functions");
  $("#functions").replaceChildren(...functions.map((f) => el("div", { class: "panel", "data-function": f.name },
    el("h2", {}, f.name), el("div", { class: "muted mono" }, f.url, f.restarts ? ` · restarted ${f.restarts}×` : ""),
    f.error ? el("p", { class: "bad" }, f.error)
      : el("table", { class: "table" }, f.figures.map((row) => el("tr", {}, el("td", {}, row.label), el("td", { class: "mono" }, row.value)))))));
  if (!functions.length) $("#functions").append(el("p", { class: "muted" }, "No functions run beside this local cloud."));
}

// MARK: Logs

// The functions' own lines; one with a trace links to the event the trace belongs to.
async function renderLogs() {
  const [{ lines }, { events }] = await Promise.all([api("/herald/console/logs?limit=500"), api("/herald/console/events?limit=500")]);
  const eventOfTrace = Object.fromEntries(events.filter((e) => e.traceId).map((e) => [e.traceId, e.id]));
  const functions = $("#log-filter [name=function]");
  for (const name of new Set(lines.map((line) => line.function))) {
    if (![...functions.options].some((option) => option.value === name)) functions.append(el("option", { value: name }, name));
  }
  const filter = state.logFilter;
  const search = filter.search.trim().toLowerCase();
  const shown = lines.filter((line) => (!filter.function || line.function === filter.function) && (!filter.severity || line.severity === filter.severity)
    && (!search || line.message.toLowerCase().includes(search) || (line.document || "").toLowerCase().includes(search)));
  $("#logs").replaceChildren(...shown.map((line) => {
    const event = line.traceId ? eventOfTrace[line.traceId] : undefined;
    return el("li", { class: `log ${line.severity.toLowerCase()}`, "data-log-function": line.function, "data-trace": line.traceId || "" },
      el("span", { class: "time" }, line.time ? new Date(line.time).toLocaleTimeString([], { hour12: false }) : ""), el("span", { class: "function" }, line.function),
      el("span", { class: "severity" }, line.severity), el("span", { class: "message" }, line.message),
      event ? el("a", { href: `#event-${event}`, class: "event-link", onclick: (e) => { e.preventDefault(); focusEvent(event); } }, `event #${event}`) : el("span", {}, ""));
  }));
  if (!shown.length) $("#logs").append(el("li", { class: "muted" }, lines.length ? "No line matches the filter." : "No function has logged anything yet."));
}
