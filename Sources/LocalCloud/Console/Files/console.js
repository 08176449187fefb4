// Herald's local cloud console: plain DOM, no build step. It reads the local cloud's own APIs
// (Firestore REST, /herald/…) and redraws the open view whenever the change stream says so.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const state = { view: "events", project: "", openEvents: new Set(), expanded: new Set(), documentPath: null, editing: false, highlight: null, world: null };

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  return node;
}

async function api(path, { method = "GET", body } = {}) {
  const response = await fetch(path, {
    method, headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : {};
  if (!response.ok) throw new Error(json.error?.message || `${response.status} ${response.statusText}`);
  return json;
}

function toast(message, isError = false) {
  const node = $("#toast");
  node.textContent = message;
  node.className = "toast show" + (isError ? " error" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (node.className = "toast"), isError ? 6000 : 2500);
}

const time = (seconds) => new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
const documents = () => `/v1/projects/${encodeURIComponent(state.project)}/databases/(default)/documents`;
const encodePath = (path) => path.split("/").map(encodeURIComponent).join("/");

// MARK: Views and live updates

const views = {
  events: renderEvents, firestore: renderFirestore, devices: renderDevices, deliveries: renderDeliveries, faults: renderFaults,
  functions: renderFunctions,
};

function show(view) {
  if (!views[view]) view = "events";
  state.view = view;
  for (const name of Object.keys(views)) $(`#view-${name}`).hidden = name !== view;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.view === view);
  if (location.hash !== `#${view}`) history.replaceState(null, "", `#${view}`);
  refresh();
}

let refreshing = null;
let refreshAgain = false;
async function refresh() {
  if (refreshing) { refreshAgain = true; return refreshing; }
  refreshing = (async () => {
    try { await views[state.view](); } catch (error) {
      // Shown, and tried again shortly: a quiet system sends no change that would redraw it.
      toast(error.message, true);
      setTimeout(refresh, 1000);
    }
  })();
  await refreshing;
  refreshing = null;
  if (refreshAgain) { refreshAgain = false; setTimeout(refresh, 150); }
}

function listen() {
  const live = $("#live");
  const stream = new EventSource("/herald/console/stream");
  stream.addEventListener("open", () => { live.textContent = "live"; live.className = "live on"; });
  stream.addEventListener("error", () => { live.textContent = "reconnecting…"; live.className = "live off"; });
  stream.addEventListener("change", () => { if (!state.editing) refresh(); });
}

// MARK: Composer (the app's actions, as the local cloud's owner describes them)

async function renderComposer() {
  state.world = await api("/herald/console/world");
  const form = $("#composer");
  form.replaceChildren();
  for (const action of state.world.actions || []) {
    const group = el("span", { class: "action", "data-action": action.name });
    for (const parameter of action.parameters) {
      const id = `action-${action.name}-${parameter.name}`;
      group.append(el("label", { for: id }, parameter.label));
      group.append(parameter.choices
        ? el("select", { id, name: parameter.name }, parameter.choices.map((c) => el("option", { value: c.value }, c.label)))
        : el("input", { id, name: parameter.name, autocomplete: "off", placeholder: "type, then Enter" }));
    }
    group.append(el("button", { type: "button", class: "primary", onclick: () => perform(action.name, group) }, action.label));
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target.tagName === "INPUT") { event.preventDefault(); perform(action.name, group); }
    });
    form.append(group);
  }
  form.hidden = !(state.world.actions || []).length;
}

async function perform(name, group) {
  const arguments_ = {};
  for (const input of group.querySelectorAll("input, select")) arguments_[input.name] = input.value;
  try {
    const result = await api(`/herald/console/actions/${encodeURIComponent(name)}`, { method: "POST", body: arguments_ });
    toast(result.done);
    const text = group.querySelector("input[name=text]");
    if (text) text.value = "";
  } catch (error) { toast(error.message, true); }
}

// MARK: Events: write → trigger → function → writes → pushes

function outcome(event) {
  if (event.state === "dead") return ["failed", "dead letter: " + (event.lastError || "")];
  if (event.state === "in_flight") return ["pending", "being delivered"];
  if (event.state === "delivered") return [event.answer?.outcome || "delivered", event.answer?.reason || ""];
  if (event.attempts > 0) return ["retrying", event.lastError || ""];
  return ["pending", "waiting for its first attempt"];
}

function deviceLabel(token) { return state.world?.devices?.[token] || token; }

function pushSummary(message) {
  const badge = message.apns?.payload?.aps?.badge ?? message.android?.notification?.notification_count ?? message.data?.badge;
  const notification = message.notification || message.apns?.payload?.aps?.alert;
  return { title: notification?.title, body: notification?.body, badge, silent: !notification, reason: message.data?.reason };
}

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
    : event.cause?.job ? `by the job ${event.cause.job}` : "by a client or person";
  const calls = Object.entries(event.calls || {}).map(([api, n]) => `${api} ${n}`).join(", ");
  const writes = event.writes || [];
  return el("div", { class: "path" },
    el("div", { class: "stage" }, el("h3", {}, "Write"), documentLink(event.document), el("div", {}, `${kind}, `, cause)),
    el("div", { class: "stage" }, el("h3", {}, "Trigger"), el("div", {}, event.trigger),
      el("div", { class: "muted" }, `attempt ${Math.max(event.attempts, 1)} · event ${event.eventId.slice(0, 8)}`),
      (event.injected || []).length ? el("div", { class: "muted" }, "injected: " + event.injected.join(", ")) : null),
    el("div", { class: "stage" }, el("h3", {}, "Function"), el("span", { class: `badge ${result}` }, result),
      reason ? el("div", { class: "muted" }, reason) : null,
      event.latencyMs !== null ? el("div", { class: "muted" }, `${event.latencyMs} ms`) : null,
      calls ? el("div", { class: "muted" }, `calls: ${calls}`) : null),
    el("div", { class: "stage" }, el("h3", {}, `Writes (${writes.length})`),
      writes.length ? el("ul", {}, writes.map((w) => el("li", {}, documentLink(w.document), ` ${w.kind}`))) : el("span", { class: "muted" }, "none")),
    el("div", { class: "stage" }, el("h3", {}, `Pushes (${(event.pushes || []).length})`),
      (event.pushes || []).length
        ? el("ul", {}, event.pushes.map((push) => {
          const summary = pushSummary(push.message);
          return el("li", {}, el("a", { href: "#devices", onclick: (e) => { e.preventDefault(); state.highlight = push.token; show("devices"); } }, deviceLabel(push.token || push.message.topic || "?")),
            summary.silent ? ` silent, badge ${summary.badge ?? "–"}` : `: ${summary.title || ""} — ${summary.body || ""}`);
        }))
        : el("span", { class: "muted" }, "none")));
}

function focusEvent(id) {
  state.openEvents.add(id);
  show("events");
  setTimeout(() => document.getElementById(`event-${id}`)?.scrollIntoView({ block: "center" }), 200);
}

async function renderEvents() {
  const { events } = await api("/herald/console/events?limit=150");
  const list = $("#events");
  list.replaceChildren(...events.map((event) => {
    const [result] = outcome(event);
    const open = state.openEvents.has(event.id);
    const item = el("li", { class: "event", id: `event-${event.id}`, "data-document": event.document, "data-outcome": result },
      el("button", {
        type: "button", "aria-expanded": String(open),
        onclick: () => { open ? state.openEvents.delete(event.id) : state.openEvents.add(event.id); renderEvents(); },
      },
      el("span", { class: "time" }, time(event.createdAt)), el("span", {}, event.trigger), el("span", { class: "doc mono" }, event.document),
      el("span", { class: `badge ${result}` }, result), el("span", { class: "latency" }, event.latencyMs === null ? "" : `${event.latencyMs} ms`)));
    if (open) item.append(eventPath(event));
    return item;
  }));
  if (!events.length) list.append(el("li", { class: "muted" }, "No events yet. Write a document, or use the app's actions above."));
}

// MARK: Firestore: tree, typed document editor, query box

async function collectionIDs(parent) {
  const base = parent ? `${documents()}/${encodePath(parent)}` : documents();
  return (await api(`${base}:listCollectionIds`, { method: "POST", body: {} })).collectionIds || [];
}

async function listDocuments(collection) {
  return (await api(`${documents()}/${encodePath(collection)}?pageSize=300`)).documents || [];
}

const relative = (name) => name.split("/documents/").slice(1).join("/documents/");

async function renderTree(parent = "") {
  const list = el("ul");
  for (const id of await collectionIDs(parent)) {
    const path = parent ? `${parent}/${id}` : id;
    const open = state.expanded.has(path);
    const item = el("li", {}, el("button", { type: "button", class: "collection" + (open ? " open" : ""), "data-collection": path, onclick: () => toggle(path) }, id));
    if (open) {
      const docs = el("ul");
      for (const document of await listDocuments(path)) {
        const docPath = relative(document.name);
        const docID = docPath.split("/").pop();
        docs.append(el("li", {}, el("button", { type: "button", class: "doc-link" + (docPath === state.documentPath ? " current" : ""), "data-path": docPath, onclick: () => openDocument(docPath) }, docID)));
        if (state.expanded.has(docPath)) docs.append(el("li", {}, await renderTree(docPath)));
      }
      item.append(docs);
    }
    list.append(item);
  }
  return list;
}

function toggle(path) {
  state.expanded.has(path) ? state.expanded.delete(path) : state.expanded.add(path);
  renderFirestore();
}

async function renderFirestore() {
  $("#tree").replaceChildren(await renderTree());
  if (state.editing) return;
  if (state.query) await renderQuery(state.query);
  else if (state.documentPath) await renderDocument(state.documentPath);
}

async function openDocument(path) {
  state.documentPath = path;
  state.query = null;
  state.editing = false;
  const parts = path.split("/");
  for (let i = 1; i < parts.length; i += 2) state.expanded.add(parts.slice(0, i).join("/"));
  state.expanded.add(path);
  if (state.view !== "firestore") show("firestore"); else renderFirestore();
}

const typeOf = (value) => Object.keys(value)[0].replace("Value", "");

function plain(value) {
  const [type, inner] = Object.entries(value)[0];
  switch (type) {
    case "integerValue": return Number(inner);
    case "doubleValue": return Number(inner);
    case "nullValue": return null;
    case "mapValue": return Object.fromEntries(Object.entries(inner.fields || {}).map(([k, v]) => [k, plain(v)]));
    case "arrayValue": return (inner.values || []).map(plain);
    default: return inner;
  }
}

function typed(json) {
  if (json === null) return { nullValue: null };
  if (typeof json === "boolean") return { booleanValue: json };
  if (typeof json === "number") return Number.isInteger(json) ? { integerValue: String(json) } : { doubleValue: json };
  if (typeof json === "string") return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(json) ? { timestampValue: json } : { stringValue: json };
  if (Array.isArray(json)) return { arrayValue: { values: json.map(typed) } };
  return { mapValue: { fields: Object.fromEntries(Object.entries(json).map(([k, v]) => [k, typed(v)])) } };
}

function display(value) {
  const type = typeOf(value);
  if (type === "map" || type === "array") return JSON.stringify(plain(value), null, 1);
  const inner = plain(value);
  return type === "string" ? inner : String(inner);
}

async function renderDocument(path) {
  const panel = $("#document");
  let document;
  const stillWanted = () => !state.editing && !state.query && state.documentPath === path;
  try { document = await api(`${documents()}/${encodePath(path)}`); } catch (error) {
    if (stillWanted()) panel.replaceChildren(el("h2", {}, path), el("p", { class: "muted" }, "No such document (deleted?)."));
    return;
  }
  // A redraw that started before the person clicked Edit (or opened another document) must not undo it.
  if (!stillWanted()) return;
  const fields = Object.entries(document.fields || {}).sort(([a], [b]) => a.localeCompare(b));
  panel.replaceChildren(
    el("h2", { class: "mono", "data-path": path }, path),
    el("div", { class: "muted" }, `updated ${document.updateTime}`),
    el("table", { class: "fields" }, fields.map(([name, value]) =>
      el("tr", { "data-field": name }, el("td", { class: "name mono" }, name), el("td", { class: "type" }, typeOf(value)), el("td", { class: "value mono" }, display(value))))),
    el("div", { class: "buttons" },
      el("button", { type: "button", class: "primary", onclick: () => editDocument(path, document.fields || {}) }, "Edit"),
      el("button", { type: "button", class: "danger", onclick: () => deleteDocument(path) }, "Delete")));
}

const types = ["string", "integer", "double", "boolean", "null", "timestamp", "map", "array", "reference"];

function fieldRow(name = "", value = { stringValue: "" }) {
  const type = typeOf(value);
  const input = type === "map" || type === "array"
    ? el("textarea", { name: "value", spellcheck: "false" }, display(value))
    : el("input", { name: "value", value: type === "null" ? "" : display(value), spellcheck: "false" });
  const row = el("tr", {},
    el("td", { class: "name" }, el("input", { name: "name", value: name, placeholder: "field", "aria-label": "field name" })),
    el("td", { class: "type" }, el("select", { name: "type", "aria-label": "type" }, types.map((t) => el("option", { value: t, selected: t === type }, t)))),
    el("td", { class: "value" }, input),
    el("td", {}, el("button", { type: "button", "aria-label": "remove field", onclick: () => row.remove() }, "×")));
  row.original = { name, value };
  return row;
}

function readValue(row) {
  const type = row.querySelector("[name=type]").value;
  const text = row.querySelector("[name=value]").value;
  const { original } = row;
  switch (type) {
    case "string": return { stringValue: text };
    case "integer": if (!/^-?\d+$/.test(text.trim())) throw new Error(`${text} is not an integer`); return { integerValue: text.trim() };
    case "double": if (text.trim() === "" || isNaN(Number(text))) throw new Error(`${text} is not a number`); return { doubleValue: Number(text) };
    case "boolean": return { booleanValue: text.trim() === "true" };
    case "null": return { nullValue: null };
    case "timestamp": if (isNaN(Date.parse(text))) throw new Error(`${text} is not a time (RFC 3339)`); return { timestampValue: text.trim() };
    case "reference": return { referenceValue: text.trim() };
    case "map": case "array": {
      const json = JSON.parse(text || (type === "map" ? "{}" : "[]"));
      // Unchanged, it keeps its exact types (timestamps inside a map stay timestamps).
      if (original.value && typeOf(original.value) === type && JSON.stringify(plain(original.value)) === JSON.stringify(json)) return original.value;
      if (type === "array" ? !Array.isArray(json) : (typeof json !== "object" || json === null || Array.isArray(json))) throw new Error(`not a JSON ${type}`);
      return typed(json);
    }
  }
}

function editDocument(path, fields, isNew = false) {
  state.editing = true;
  const rows = el("tbody", {}, Object.entries(fields).map(([name, value]) => fieldRow(name, value)));
  const pathInput = isNew ? el("input", { name: "path", placeholder: "collection/documentId (id optional)", value: path, class: "mono", "aria-label": "document path" }) : null;
  const form = el("form", { onsubmit: async (event) => {
    event.preventDefault();
    try {
      const values = {};
      for (const row of rows.children) {
        const name = row.querySelector("[name=name]").value.trim();
        if (name) values[name] = readValue(row);
      }
      let target = isNew ? pathInput.value.trim().replace(/^\/+|\/+$/g, "") : path;
      if (isNew && target.split("/").length % 2 === 1) {
        const created = await api(`${documents()}/${encodePath(target)}`, { method: "POST", body: { fields: values } });
        target = relative(created.name);
      } else {
        await api(`${documents()}/${encodePath(target)}${isNew ? "?currentDocument.exists=false" : ""}`, { method: "PATCH", body: { fields: values } });
      }
      toast(`saved ${target}`);
      state.editing = false;
      openDocument(target);
    } catch (error) { toast(error.message, true); }
  } },
  isNew ? el("h2", {}, "New document") : el("h2", { class: "mono" }, path), pathInput,
  el("table", { class: "fields" }, rows),
  el("div", { class: "buttons" },
    el("button", { type: "button", onclick: () => rows.append(fieldRow()) }, "Add field"),
    el("button", { type: "submit", class: "primary" }, "Save"),
    el("button", { type: "button", onclick: () => { state.editing = false; isNew ? $("#document").replaceChildren() : renderDocument(path); } }, "Cancel")));
  form.addEventListener("keydown", (event) => { if (event.key === "Escape") { state.editing = false; renderFirestore(); } });
  $("#document").replaceChildren(form);
  form.querySelector("input")?.focus();
}

async function deleteDocument(path) {
  if (!confirm(`Delete ${path}?`)) return;
  try {
    await api(`${documents()}/${encodePath(path)}`, { method: "DELETE" });
    toast(`deleted ${path}`);
    state.documentPath = null;
    $("#document").replaceChildren();
    renderFirestore();
  } catch (error) { toast(error.message, true); }
}

const operators = { "==": "EQUAL", "!=": "NOT_EQUAL", "<": "LESS_THAN", "<=": "LESS_THAN_OR_EQUAL", ">": "GREATER_THAN", ">=": "GREATER_THAN_OR_EQUAL", "array-contains": "ARRAY_CONTAINS", "in": "IN" };

function literal(text) {
  if (/^-?\d+$/.test(text)) return { integerValue: text };
  if (/^-?\d*\.\d+$/.test(text)) return { doubleValue: Number(text) };
  if (text === "true" || text === "false") return { booleanValue: text === "true" };
  if (text === "null") return { nullValue: null };
  if (text.startsWith("[")) return typed(JSON.parse(text));
  return { stringValue: text.replace(/^"(.*)"$/, "$1") };
}

// `rooms where owner == ada and tags array-contains red order by createdAt desc limit 20`
function parseQuery(text) {
  const match = /^\s*(\S+)(?:\s+where\s+(.+?))?(?:\s+order\s+by\s+(\S+)(?:\s+(asc|desc))?)?(?:\s+limit\s+(\d+))?\s*$/i.exec(text);
  if (!match) throw new Error("expected: COLLECTION [where FIELD OP VALUE [and …]] [order by FIELD [asc|desc]] [limit N]");
  const [, collection, where, orderField, direction, limit] = match;
  const query = { from: [{ collectionId: collection, allDescendants: true }] };
  if (where) {
    const filters = where.split(/\s+and\s+/i).map((clause) => {
      const parts = /^(\S+)\s+(==|!=|<=|>=|<|>|array-contains|in)\s+(.+)$/.exec(clause.trim());
      if (!parts) throw new Error(`cannot read the condition "${clause}"`);
      return { fieldFilter: { field: { fieldPath: parts[1] }, op: operators[parts[2]], value: literal(parts[3].trim()) } };
    });
    query.where = filters.length === 1 ? filters[0] : { compositeFilter: { op: "AND", filters } };
  }
  if (orderField) query.orderBy = [{ field: { fieldPath: orderField }, direction: (direction || "asc").toLowerCase() === "desc" ? "DESCENDING" : "ASCENDING" }];
  if (limit) query.limit = Number(limit);
  return query;
}

// The panel shows the query's answer from now on, kept up to date like a listener.
async function runQuery(text) {
  parseQuery(text);
  state.query = text;
  state.documentPath = null;
  await renderQuery(text);
}

async function renderQuery(text) {
  const results = await api(`${documents()}:runQuery`, { method: "POST", body: { structuredQuery: parseQuery(text) } });
  if (state.editing || state.query !== text) return;
  const found = results.filter((r) => r.document).map((r) => r.document);
  $("#document").replaceChildren(
    el("h2", {}, `${found.length} document${found.length === 1 ? "" : "s"}`, el("span", { class: "muted mono" }, `  ${text}`)),
    el("table", { class: "fields", id: "query-results" }, found.map((document) => el("tr", {},
      el("td", { class: "name" }, documentLink(relative(document.name))),
      el("td", { class: "value mono" }, Object.entries(document.fields || {}).map(([k, v]) => `${k}: ${display(v)}`).join("  ·  "))))));
}

// MARK: Devices

async function renderDevices() {
  const { devices } = await api("/herald/console/devices");
  const grid = $("#devices");
  grid.replaceChildren(...devices.map((device) => el("article", { class: "phone" + (device.token === state.highlight ? " highlight" : ""), "data-token": device.token },
    el("header", {}, el("strong", {}, device.label || "Unknown device"), el("span", { class: "mono" }, device.token),
      device.dead ? el("div", { class: "dead" }, "token unregistered") : null),
    device.pushes.length ? device.pushes.map((push) => {
      const summary = pushSummary(push.message);
      if (summary.silent) {
        return el("div", { class: "note silent" }, `${time(push.receivedAt)} · badge ${summary.badge ?? "–"}${summary.reason ? ` · ${summary.reason}` : ""}`);
      }
      return el("div", { class: "note" },
        el("div", { class: "meta" }, el("span", {}, time(push.receivedAt)), summary.badge !== undefined ? el("span", { class: "badge-count" }, summary.badge) : null),
        el("strong", {}, summary.title || ""), el("div", {}, summary.body || ""));
    }) : el("p", { class: "muted" }, "Nothing yet."))));
  if (!devices.length) grid.append(el("p", { class: "muted" }, "No pushes yet."));
  if (state.highlight) $(`.phone.highlight`)?.scrollIntoView({ block: "nearest" });
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
  try { await api(`/herald/deliveries/${id}:replay`, { method: "POST", body: {} }); toast(`event #${id} replayed`); renderDeliveries(); } catch (error) { toast(error.message, true); }
}

async function runJob(name) {
  try {
    const result = await api(`/herald/scheduler/jobs/${encodeURIComponent(name)}:run`, { method: "POST", body: {} });
    toast(`${name}: ${result.status ?? "no answer"}${result.error ? ` ${result.error}` : ""}`, !(result.status >= 200 && result.status < 300));
    renderDeliveries();
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

// MARK: Start

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(event.target.tagName);
  if (typing || event.metaKey || event.ctrlKey || event.altKey) return;
  const index = Number(event.key) - 1;
  if (index >= 0 && index < Object.keys(views).length) { event.preventDefault(); show(Object.keys(views)[index]); }
  if (event.key === "/") { event.preventDefault(); show("firestore"); $("#query-text").focus(); }
  if (event.key === "n") { const text = $("#composer input"); if (text) { event.preventDefault(); text.focus(); } }
});

window.addEventListener("hashchange", () => show(location.hash.slice(1)));

document.addEventListener("DOMContentLoaded", async () => {
  for (const link of document.querySelectorAll("nav a")) link.addEventListener("click", (e) => { e.preventDefault(); show(link.dataset.view); });
  $("#query").addEventListener("submit", async (event) => {
    event.preventDefault();
    try { await runQuery($("#query-text").value); } catch (error) { toast(error.message, true); }
  });
  $("#new-document").addEventListener("click", () => editDocument("", { text: { stringValue: "" } }, true));
  try {
    const info = await api("/");
    state.project = info.project;
    $("#project").textContent = `project ${info.project}`;
    await renderComposer();
  } catch (error) { toast(error.message, true); }
  show(location.hash.slice(1) || "events");
  listen();
});
