// Herald's local cloud console: plain DOM, no build step. It reads the local cloud's own APIs
// (Firestore REST, /herald/…) and redraws the open view whenever the change stream says so.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const state = { eventFilter: { function: "", outcome: "", search: "" }, logFilter: { function: "", severity: "", search: "" }, view: "events", project: "", firestore: "", openEvents: new Set(), expanded: new Set(), documentPath: null, editing: false, highlight: null, world: null };

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
// The documents: here, or in the Firestore `herald dev --firestore` keeps them in (its REST API, which
// answers this page's CORS preflights).
const documents = () => `${state.firestore}/v1/projects/${encodeURIComponent(state.project)}/databases/(default)/documents`;
const encodePath = (path) => path.split("/").map(encodeURIComponent).join("/");

// MARK: Views and live updates

// Each view draws itself (views.js, firestore.js: loaded after this file, so looked up when called).
const views = {
  events: () => renderEvents(), firestore: () => renderFirestore(), devices: () => renderDevices(),
  deliveries: () => renderDeliveries(), faults: () => renderFaults(), functions: () => renderFunctions(), logs: () => renderLogs(),
  users: () => renderUsers(),
};

function show(view) {
  if (!views[view]) view = "events";
  state.view = view;
  for (const name of Object.keys(views)) $(`#view-${name}`).hidden = name !== view;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.view === view);
  if (location.hash !== `#${view}`) history.replaceState(null, "", `#${view}`);
  refresh();
}

// Every redraw goes through here, one at a time: a state change or a live change made while one runs
// draws again right after it, so the last drawing always shows the latest state.
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
  if (refreshAgain) { refreshAgain = false; setTimeout(refresh, 0); }
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
  $("#event-filter").addEventListener("input", (event) => {
    state.eventFilter[event.target.name] = event.target.value;
    renderEvents();
  });
  $("#event-filter").addEventListener("submit", (event) => event.preventDefault());
  $("#log-filter").addEventListener("input", (event) => {
    state.logFilter[event.target.name] = event.target.value;
    renderLogs();
  });
  $("#log-filter").addEventListener("submit", (event) => event.preventDefault());
  $("#new-document").addEventListener("click", () => editDocument("", { text: { stringValue: "" } }, true));
  try {
    const info = await api("/");
    state.project = info.project;
    state.firestore = info.firestore || "";
    $("#project").textContent = info.firestore ? `project ${info.project} · documents in ${info.firestore}` : `project ${info.project}`;
    await renderComposer();
  } catch (error) { toast(error.message, true); }
  show(location.hash.slice(1) || "events");
  listen();
});
