// The console's Firestore view: collections and documents as a tree, a typed editor, a query box.
// Loaded after console.js, whose helpers it uses.
"use strict";

// MARK: Firestore: tree, typed document editor, query box

async function collectionIDs(parent) {
  const base = parent ? `${documents()}/${encodePath(parent)}` : documents();
  return (await api(`${base}:listCollectionIds`, { method: "POST", body: {} })).collectionIds || [];
}

// The names only (a mask with no field), and the first 300: a query finds the rest.
async function listDocuments(collection) {
  const page = await api(`${documents()}/${encodePath(collection)}?pageSize=300&mask.fieldPaths=__name__`);
  return { documents: page.documents || [], more: Boolean(page.nextPageToken) };
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
      const { documents: found, more } = await listDocuments(path);
      for (const document of found) {
        const docPath = relative(document.name);
        const docID = docPath.split("/").pop();
        docs.append(el("li", {}, el("button", { type: "button", class: "doc-link" + (docPath === state.documentPath ? " current" : ""), "data-path": docPath, onclick: () => openDocument(docPath) }, docID)));
        if (state.expanded.has(docPath)) docs.append(el("li", {}, await renderTree(docPath)));
      }
      if (more) docs.append(el("li", { class: "muted" }, "first 300 shown; a query finds the rest"));
      item.append(docs);
    }
    list.append(item);
  }
  return list;
}

function toggle(path) {
  state.expanded.has(path) ? state.expanded.delete(path) : state.expanded.add(path);
  refresh();
}

// Documents written above Firestore's sustained rate (about one a second) over the last 10 s: each with
// its rate and who wrote it, a link to open it. In production such a document's commits fail with ABORTED.
async function renderHot() {
  const { hot = [], limited } = await api("/herald/writes");
  const box = $("#hot");
  box.hidden = hot.length === 0;
  box.replaceChildren(
    el("p", {}, el("strong", {}, `${hot.length} hot document${hot.length === 1 ? "" : "s"}`),
      ` written more than once a second over the last 10 s: Firestore sustains about one write a second per document${limited ? " (herald dev admits them at that rate: --write-rate-limit)" : ""}.`),
    el("ul", {}, ...hot.slice(0, 10).map((h) => el("li", { class: "hot-document" },
      el("button", { type: "button", class: "doc-link", "data-path": h.document, onclick: () => openDocument(h.document) }, h.document),
      ` ${Number(h.perSecond).toFixed(1)} writes/s, by `,
      Object.entries(h.writers).sort((a, b) => b[1] - a[1]).map(([who, n]) => `${who} (${n})`).join(", ")))));
}

async function renderFirestore() {
  await renderHot();
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
  if (state.view !== "firestore") show("firestore"); else refresh();
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
      const values = Object.create(null); // a field may be called __proto__
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
    el("button", { type: "button", onclick: () => { state.editing = false; if (isNew) $("#document").replaceChildren(); refresh(); } }, "Cancel")));
  form.addEventListener("keydown", (event) => { if (event.key === "Escape") { state.editing = false; refresh(); } });
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
    refresh();
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
  await refresh();
}

async function renderQuery(text) {
  let results;
  try {
    results = await api(`${documents()}:runQuery`, { method: "POST", body: { structuredQuery: parseQuery(text) } });
  } catch (error) {
    // Refused (a bad query): said once in the panel, not retried.
    if (!state.editing && state.query === text) $("#document").replaceChildren(el("h2", {}, "Query refused"), el("p", { class: "bad" }, error.message));
    return;
  }
  if (state.editing || state.query !== text) return;
  const found = results.filter((r) => r.document).map((r) => r.document);
  const { columns, more } = resultColumns(found);
  // One collection's documents: its path said once, above the table, not on every row.
  const parents = new Set(found.map((document) => parentOf(relative(document.name))));
  const shared = parents.size === 1 ? [...parents][0] : null;
  $("#document").replaceChildren(
    el("h2", {}, `${found.length} document${found.length === 1 ? "" : "s"}`, el("span", { class: "muted mono" }, `  ${text}`)),
    shared ? el("div", { class: "muted mono" }, `in ${shared}`) : null,
    el("div", { class: "results" }, el("table", { class: "table query-results", id: "query-results" },
      el("thead", {}, el("tr", {}, el("th", {}, "document"), columns.map((name) => el("th", { class: "mono" }, name)), more ? el("th", {}, "more") : null)),
      el("tbody", {}, found.map((document) => resultRow(document, columns, more, !shared))))));
}

// A column for each of the fields most results have (the first seven), by name, Herald's own
// bookkeeping (`herald…`) last; the rest are counted per row and shown whole when the document is opened.
function resultColumns(found) {
  const counts = new Map();
  for (const document of found) for (const name of Object.keys(document.fields || {})) counts.set(name, (counts.get(name) || 0) + 1);
  const names = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || a.localeCompare(b));
  const herald = (name) => name.startsWith("herald");
  const columns = names.slice(0, 7).sort((a, b) => herald(a) - herald(b) || a.localeCompare(b));
  return { columns, more: names.length > columns.length };
}

const parentOf = (path) => path.split("/").slice(0, -1).join("/");

function resultRow(document, columns, more, showParent) {
  const path = relative(document.name);
  const fields = document.fields || {};
  const cells = columns.map((name) => {
    if (!(name in fields)) return el("td", { class: "muted" }, "—");
    const shown = display(fields[name]).replace(/\s+/g, " ");
    return el("td", { class: "mono", "data-field": name, title: shown }, shown.length > 60 ? shown.slice(0, 59) + "…" : shown);
  });
  const others = Object.keys(fields).filter((name) => !columns.includes(name));
  const link = documentLink(path);
  link.textContent = path.split("/").pop();
  return el("tr", { "data-path": path },
    el("td", {}, link, showParent ? el("div", { class: "muted mono parent" }, parentOf(path)) : null),
    cells,
    more ? el("td", { class: "muted", title: others.join(", ") }, others.length ? `${others.length} field${others.length === 1 ? "" : "s"}` : "") : null);
}
