// The reference admin console: renders ANY page definition of GET /v1/admin/ui/{page}
// (the registry's list from GET /v1/admin/ui): its list (columns, filters, keyset paging with an
// estimated total), its form and its actions (only those the definition offers, enabled in the
// states each is allowed from). Errors are the API's problem+json, shown as they come.

import { call, current, nextCursor, Problem, query } from "./api.js";
import { collect, el, renderFields } from "./forms.js";

const $ = (id) => document.getElementById(id);
const state = { page: null, def: null, cursor: null, cursors: [], property: "" };

function report(error) {
  const box = $("problem");
  box.replaceChildren();
  if (error instanceof Problem) {
    const p = error.body;
    box.append(el("strong", { text: `${p.title || "Error"} (${p.status || error.status})` }));
    if (p.detail) box.append(el("div", { class: "detail", text: p.detail }));
    if (p.code) box.append(el("div", { class: "code", text: `code: ${p.code}` }));
    const errors = p.errors || p["invalid-params"] || [];
    if (errors.length) {
      box.append(el("ul", {}, ...errors.map((e) => el("li", { text: `${e.field || e.name || ""}: ${e.message || e.reason || ""}` }))));
    }
  } else {
    box.append(el("strong", { text: String(error && error.message ? error.message : error) }));
  }
  box.hidden = false;
}
const clearProblem = () => { $("problem").hidden = true; $("problem").replaceChildren(); };
function notice(text) { $("notice").textContent = text; $("notice").hidden = false; }

const PARAM = /\{([^}]+)\}/g;
const params = (path) => [...path.matchAll(PARAM)].map((m) => m[1]);

// A path parameter's value, as the action's declared map says: "property_id" is the row's
// property, else the property picked; "" is entered by the user; any other name is that
// column of the row. Nothing is guessed from parameter names.
function paramValue(name, action, row) {
  const source = (action.params || {})[name] ?? "";
  if (source === "property_id") return (row && row.property_id) || state.property;
  if (source === "" || !row) return "";
  return row[source] ?? "";
}
const rowAction = (action) => Boolean(action.on_row);
const allowed = (action, row) => !action.allowed_from || !row || action.allowed_from.includes(row.status);

async function loadProperties() {
  const page = await call("GET", "/v1/properties?limit=200");
  const select = $("property");
  select.replaceChildren(...(page.data || []).map((p) =>
    el("option", { value: p.id, text: `${p.propertyCode || p.property_code || p.code || ""} ${p.name || ""}`.trim() || p.id })));
  state.property = select.value;
  select.addEventListener("change", () => { state.property = select.value; showPage(state.page); });
}

async function loadPages() {
  const index = await call("GET", "/v1/admin/ui");
  $("pages").replaceChildren(...index.data.map((p) => {
    const link = el("a", { href: `#${p.page}`, "data-page": p.page, text: p.title });
    return link;
  }));
  return index.data;
}

async function showPage(name) {
  if (!name) return;
  clearProblem();
  $("notice").hidden = true;
  $("panel").hidden = true;
  for (const a of $("pages").querySelectorAll("a")) {
    if (a.dataset.page === name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const def = await call("GET", `/v1/admin/ui/${encodeURIComponent(name)}`);
  Object.assign(state, { page: name, def, cursor: null, cursors: [] });
  $("title").textContent = def.title;
  document.title = `${def.title} · PMS admin`;
  renderToolbar(def);
  renderFilters(def);
  $("page").hidden = false;
  $("page").dataset.page = name;
  $("page").dataset.loaded = "";
  await loadList();
  $("page").dataset.loaded = name;
}

function renderToolbar(def) {
  const bar = $("toolbar");
  bar.replaceChildren();
  for (const action of def.actions.filter((a) => !rowAction(a))) {
    const button = el("button", { type: "button", "data-action": action.name, title: `${action.method} ${action.path}`,
                                  text: action.name.replaceAll("_", " ") });
    button.addEventListener("click", () => openAction(action, null).catch(report));
    bar.append(button);
  }
}

function renderFilters(def) {
  const form = $("filters");
  form.replaceChildren();
  for (const name of def.filters) {
    const input = el("input", { name, value: name === "property_id" ? state.property : "", size: 12 });
    form.append(el("label", {}, name, input));
  }
  if (def.filters.length) form.append(el("button", { type: "submit", text: "Filter" }));
  form.onsubmit = (event) => { event.preventDefault(); state.cursor = null; state.cursors = []; loadList().catch(report); };
}

async function loadList() {
  const def = state.def;
  const filters = Object.fromEntries(new FormData($("filters")).entries());
  const page = await call("GET", def.data_url + query({ ...filters, limit: 25, cursor: state.cursor }));
  const rowActions = def.actions.filter(rowAction);
  $("list").tHead.replaceChildren(el("tr", {}, ...def.list_columns.map((c) => el("th", { text: c })),
                                     ...(rowActions.length ? [el("th", { text: "actions" })] : [])));
  const body = $("list").tBodies[0];
  body.replaceChildren();
  for (const row of page.data) {
    const tr = el("tr", { "data-id": row.id });
    for (const column of def.list_columns) {
      const value = row[column];
      tr.append(el("td", { text: value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value) }));
    }
    if (rowActions.length) {
      const cell = el("td");
      for (const action of rowActions) {
        const button = el("button", { type: "button", "data-action": action.name, disabled: !allowed(action, row),
                                      title: `${action.method} ${action.path}`, text: action.name.replaceAll("_", " ") });
        button.addEventListener("click", () => openAction(action, row).catch(report));
        cell.append(button);
      }
      tr.append(cell);
    }
    body.append(tr);
  }
  const next = nextCursor(page);
  $("total").textContent = `${page.data.length} shown, about ${page.estimated_total ?? page.estimatedTotal ?? "?"} in all`;
  $("next").disabled = !next;
  $("first").disabled = !state.cursor;
  $("next").onclick = () => { state.cursors.push(state.cursor); state.cursor = next; loadList().catch(report); };
  $("first").onclick = () => { state.cursor = null; state.cursors = []; loadList().catch(report); };
}

// A replace (PUT) opens with the resource as it is, when its path is known: saving a change of
// one field keeps the others (a kiosk's lockdown), and If-Match sends the ETag it was read at.
async function currentState(action, row) {
  if (action.method !== "PUT") return null;
  let path = action.domain_path;
  for (const name of params(action.domain_path)) {
    const value = paramValue(name, action, row);
    if (!value) return null;
    path = path.replace(`{${name}}`, encodeURIComponent(value));
  }
  return current(path);
}

async function openAction(action, row) {
  clearProblem();
  const now = await currentState(action, row).catch(() => null);
  const values = now ? { ...(row || {}), ...now.body } : row;
  const def = state.def;
  const panel = $("panel");
  const form = $("action-form");
  form.replaceChildren();
  form.dataset.action = action.name;
  $("panel-title").textContent = action.name.replaceAll("_", " ");
  $("panel-route").textContent = `${action.method} ${action.path}`;
  const pathRow = el("div", { class: "row" });
  for (const name of params(action.path)) {
    pathRow.append(el("label", { "data-param": name }, `{${name}}`,
                      el("input", { name: `path:${name}`, value: paramValue(name, action, row) || "", size: 36 })));
  }
  form.append(pathRow);
  const schema = action.schema;
  const ui = action.name === def.form_action ? def.ui_schema : null;
  if (schema) renderFields(form, schema, ui, values, state.property, report);
  form.dataset.etag = (now && now.etag) || "";
  const submit = el("button", { type: "submit", text: `${action.method} ${action.name.replaceAll("_", " ")}` });
  const cancel = el("button", { type: "button", text: "Close" });
  cancel.addEventListener("click", () => { panel.hidden = true; });
  form.append(el("div", { class: "row" }, submit, cancel));
  // one key per opening of the form: a second click, or a retry after a lost answer, is the
  // same request to the API (it replays the first answer), and the button waits for it
  const key = crypto.randomUUID();
  form.dataset.idempotencyKey = key;
  form.onsubmit = (event) => {
    event.preventDefault();
    if (submit.disabled) return;
    submit.disabled = true;
    submitAction(action, form, key).catch(report).finally(() => { submit.disabled = false; });
  };
  panel.hidden = false;
  panel.scrollIntoView({ block: "nearest" });
}

async function submitAction(action, form, key) {
  clearProblem();
  let path = action.path;
  for (const name of params(action.path)) {
    const value = form.querySelector(`[name="path:${name}"]`).value.trim();
    if (!value) throw new Error(`{${name}} is required`);
    path = path.replace(`{${name}}`, encodeURIComponent(value));
  }
  const body = action.schema ? collect(form) : undefined;
  const headers = action.method === "POST" ? { "Idempotency-Key": key } : {};
  if (form.dataset.etag) headers["If-Match"] = form.dataset.etag;
  const result = await call(action.method, path, body, headers);
  $("panel").hidden = true;
  notice(`${action.name.replaceAll("_", " ")}: done${result && result.id ? ` (${result.id})` : ""}`);
  state.cursor = null;
  state.cursors = [];
  await loadList();
}

async function main() {
  try {
    await loadProperties().catch(report);  // without properties:read: pages still work
    const pages = await loadPages();
    window.addEventListener("hashchange", () => showPage(location.hash.slice(1)).catch(report));
    const wanted = location.hash.slice(1);
    await showPage(pages.some((p) => p.page === wanted) ? wanted : (pages[0] || {}).page);
  } catch (error) {
    report(error);
  }
  document.body.dataset.ready = "1";
}

main();
