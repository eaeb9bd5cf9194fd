// The reference admin console: renders ANY page definition of GET /v1/admin/ui/{page}
// (the registry's list from GET /v1/admin/ui): its list (columns, filters, keyset paging with an
// estimated total), its form and its actions (only those the definition offers, enabled in the
// states each is allowed from). Errors are the API's problem+json, shown as they come.

import { call, current, nextCursor, Problem, query } from "./api.js";
import { collect, companyControl, el, renderFields } from "./forms.js";
import { currentLanguage, formatAmount, formatValue, initialLanguage, label, languages,
         rememberLanguage, setLanguage, t } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const state = { page: null, def: null, cursor: null, cursors: [], property: "", properties: [],
                pages: [] };
const AMOUNTS = new Set(["amount", "balance", "total", "unit_price"]);

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
  state.properties = page.data || [];
  const select = $("property");
  select.replaceChildren(...state.properties.map((p) =>
    el("option", { value: p.id, text: `${p.propertyCode || p.property_code || p.code || ""} ${p.name || ""}`.trim() || p.id })));
  state.property = select.value;
  select.addEventListener("change", () => { state.property = select.value; showPage(state.page).catch(report); });
}

const property = () => state.properties.find((p) => p.id === state.property) || {};

// The property's business date (its "today"), else the browser's; `days` later.
function businessDate(days = 0) {
  const given = property().businessDate || property().business_date;
  const base = given ? new Date(`${given}T00:00:00Z`) : new Date(new Date().toISOString().slice(0, 10));
  base.setUTCDate(base.getUTCDate() + days);
  return base.toISOString().slice(0, 10);
}

function renderLanguages() {
  const select = $("language");
  select.replaceChildren(...languages().map(([code, name]) =>
    el("option", { value: code, text: name, selected: code === currentLanguage() })));
  select.onchange = () => {
    setLanguage(select.value);
    rememberLanguage(select.value);
    relabel();
    showPage(state.page).catch(report);
  };
}

// The page's fixed labels in the language picked.
function relabel() {
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
  $("pages").setAttribute("aria-label", t("Pages"));
  for (const a of $("pages").querySelectorAll("a")) a.textContent = pageTitle(a.dataset.page, a.dataset.title);
}

const pageTitle = (page, title) => (currentLanguage() === "en" ? title : t(page) === page.replaceAll("_", " ") ? title : t(page));

async function loadPages() {
  const index = await call("GET", "/v1/admin/ui");
  state.pages = index.data;
  $("pages").replaceChildren(...index.data.map((p) =>
    el("a", { href: `#${p.page}`, "data-page": p.page, "data-title": p.title, text: pageTitle(p.page, p.title) })));
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
  $("title").textContent = pageTitle(name, def.title);
  document.title = `${pageTitle(name, def.title)} · PMS admin`;
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
                                  text: t(action.name) });
    button.addEventListener("click", () => openAction(action, null).catch(report));
    bar.append(button);
  }
}

// Ready-made ranges of a list whose filters allow them (the front desk's day).
function ranges(def) {
  const has = (name) => def.filters.includes(name);
  const out = [];
  if (has("arrival_date") && has("status")) out.push(["arrivals today", { arrival_date: businessDate(), status: "CONFIRMED" }]);
  if (has("status") && has("departure_date")) {
    out.push(["in-house", { status: "CHECKED_IN" }]);
    out.push(["departures tomorrow", { departure_date: businessDate(1), status: "CHECKED_IN" }]);
  }
  return out;
}

const DATE_FILTERS = new Set(["arrival_date", "departure_date", "business_date"]);

function renderFilters(def) {
  const form = $("filters");
  form.replaceChildren();
  const options = def.filter_options || {};
  for (const name of def.filters) {
    // a filter of a fixed set of values (a status) is a select of those, from the schemas
    const input = name === "property_id"
      ? el("input", { name, value: state.property, type: "hidden" })
      : options[name]
        ? el("select", { name }, el("option", { value: "", text: "" }),
             ...options[name].map((v) => el("option", { value: v, text: label(v) })))
        : el("input", { name, value: "", size: 12, type: DATE_FILTERS.has(name) ? "date" : "text" });
    form.append(name === "property_id" ? input : el("label", { "data-filter": name }, t(name), input));
  }
  if (def.filters.length) form.append(el("button", { type: "submit", text: t("Filter") }));
  const reload = () => { state.cursor = null; state.cursors = []; loadList().catch(report); };
  for (const [name, values] of ranges(def)) {
    const button = el("button", { type: "button", "data-range": name, text: t(name) });
    button.addEventListener("click", () => {
      for (const input of form.querySelectorAll("label[data-filter] [name]")) input.value = values[input.name] ?? "";
      reload();
    });
    form.append(button);
  }
  form.onsubmit = (event) => { event.preventDefault(); reload(); };
}

let listed = 0;  // the latest list asked for: an earlier answer arriving later is dropped

async function loadList() {
  const def = state.def;
  const asked = ++listed;
  $("page").dataset.listing = "1";
  const filters = Object.fromEntries(new FormData($("filters")).entries());
  const page = await call("GET", def.data_url + query({ ...filters, limit: 25, cursor: state.cursor }));
  if (asked !== listed || def !== state.def) return;
  delete $("page").dataset.listing;
  const rowActions = def.actions.filter(rowAction);
  const runs = def.list_columns.includes("path");  // a report's row: run it here
  $("list").tHead.replaceChildren(el("tr", {}, ...def.list_columns.map((c) => el("th", { scope: "col", "data-column": c, text: t(c) })),
                                     ...(rowActions.length || runs ? [el("th", { scope: "col", "data-column": "actions", text: t("actions") })] : [])));
  const body = $("list").tBodies[0];
  body.replaceChildren();
  for (const row of page.data) {
    const tr = el("tr", { "data-id": row.id });
    for (const column of def.list_columns) {
      const value = row[column];
      const text = AMOUNTS.has(column) && row.currency ? formatAmount(value, row.currency) : formatValue(column, value);
      tr.append(el("td", { "data-column": column, class: column.endsWith("status") ? "status" : undefined, text }));
    }
    if (rowActions.length || runs) {
      const cell = el("td");
      for (const action of rowActions) {
        const button = el("button", { type: "button", "data-action": action.name, disabled: !allowed(action, row),
                                      title: `${action.method} ${action.path}`, text: t(action.name) });
        button.addEventListener("click", () => openAction(action, row).catch(report));
        cell.append(button);
      }
      if (runs) {
        const button = el("button", { type: "button", "data-action": "run", title: `GET ${row.path}`, text: t("run") });
        button.addEventListener("click", () => runReport(row).catch(report));
        cell.append(button);
      }
      tr.append(cell);
    }
    body.append(tr);
  }
  const next = nextCursor(page);
  $("total").textContent = `${page.data.length} ${t("shown")}, ${t("about {n} in all", { n: page.estimated_total ?? page.estimatedTotal ?? "?" })}`;
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

// A report run for the property picked: its rows as a table in the panel.
async function runReport(row) {
  clearProblem();
  const path = row.path.replace("{property_id}", encodeURIComponent(state.property));
  const result = await call("GET", path);
  const rows = result.rows || result.data || [];
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((c) => !c.endsWith("_id"));
  const form = $("action-form");
  form.replaceChildren();
  form.dataset.action = "run";
  $("panel-title").textContent = `${t(row.name)} · ${formatValue("business_date", result.business_date || businessDate())}`;
  $("panel-route").textContent = `GET ${path}`;
  const table = el("table", { id: "report", "data-report": row.name },
    el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", { scope: "col", "data-column": c, text: t(c) })))),
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...columns.map((c) => el("td", { "data-column": c, text: formatValue(c, r[c]) }))))));
  const close = el("button", { type: "button", text: t("Close") });
  close.addEventListener("click", () => { $("panel").hidden = true; });
  form.append(el("p", { text: `${rows.length} ${t("shown")}` }), table, el("div", { class: "row" }, close));
  $("panel").hidden = false;
  $("panel").scrollIntoView({ block: "nearest" });
}


const vacantClean = (action) => /\/(check-in|room)$/.test(action.domain_path);

async function openAction(action, row) {
  clearProblem();
  $("notice").hidden = true;
  $("notice").textContent = "";
  const now = await currentState(action, row).catch(() => null);
  let values = now ? { ...(row || {}), ...now.body } : row;
  if (row && /\/folios\/\{id\}\/payments$/.test(action.domain_path)) {
    // a payment opens with the folio's balance due
    const folio = await call("GET", action.domain_path.replace("/payments", "")
      .replace("{property_id}", encodeURIComponent(row.property_id || state.property))
      .replace("{id}", encodeURIComponent(row.id))).catch(() => null);
    if (folio && folio.balance_due !== undefined) values = { ...row, amount: folio.balance_due, method: "CARD" };
  }
  const def = state.def;
  const panel = $("panel");
  const form = $("action-form");
  form.replaceChildren();
  form.dataset.action = action.name;
  $("panel-title").textContent = t(action.name);
  $("panel-route").textContent = `${action.method} ${action.path}`;
  const pathRow = el("div", { class: "row" });
  for (const name of params(action.path)) {
    const source = (action.params || {})[name] ?? "";
    const value = paramValue(name, action, row) || "";
    // what the row or the property gives is shown, not typed; a company entered is picked
    const input = source === "" && name === "profile_id"
      ? companyControl(`path:${name}`, value, report)
      : el("input", { name: `path:${name}`, value, size: 36, readonly: source !== "" && value !== "" });
    pathRow.append(el("label", { "data-param": name }, `{${name}}`, input));
  }
  form.append(pathRow);
  const schema = action.schema;
  const ui = action.name === def.form_action ? def.ui_schema : null;
  if (values && vacantClean(action)) {  // a check-in or a move picks a new room: not the stay's
    values = { ...values, room_id: undefined, room_number: undefined };
  }
  const options = { vacantClean: vacantClean(action), profileId: row && row.guest_profile_id,
                    roomTypeId: row && row.room_type_id, properties: state.properties,
                    suggestions: def.suggestions || {}, defaults: action.defaults || {} };
  if (schema) renderFields(form, schema, ui, values, state.property, report, options);
  // the action sent next with the same row (a check-in's key): its fields in a group of
  // their own, sent only when filled in
  const then = def.actions.find((a) => a.name === action.then);
  if (then && then.schema) {
    const group = el("fieldset", { "data-group": "then", "data-then": then.name },
                     el("legend", { text: `${t(then.name)} (${t("optional")})` }));
    renderFields(group, { ...then.schema, required: [] }, null, null, state.property, report, options);
    form.append(group);
  }
  form.dataset.etag = (now && now.etag) || "";
  if (destructive(action)) {  // a cancel or a delete is confirmed first (a box to tick)
    form.append(el("div", { class: "row" }, el("label", { "data-confirm": action.name },
      el("input", { type: "checkbox", name: "confirm" }), `${t("yes")}, ${t(action.name)}`)));
  }
  const submit = el("button", { type: "submit", text: t(action.name) });
  const cancel = el("button", { type: "button", text: t("Close") });
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
    submitAction(action, form, key, row).catch(report).finally(() => { submit.disabled = false; });
  };
  panel.hidden = false;
  panel.scrollIntoView({ block: "nearest" });
  const first = form.querySelector("input:not([readonly]):not([type=hidden]), select, textarea");
  if (first) first.focus();  // keyboard use: the form is where the focus goes
}

// An action's path with its parameters: those of the form, else those its map takes from
// the row (a follow-up has no path fields of its own).
function actionPath(action, form, row) {
  let path = action.path;
  for (const name of params(action.path)) {
    const input = form.querySelector(`[name="path:${name}"]`);
    const value = (input ? input.value : paramValue(name, action, row)).trim();
    if (!value) throw new Error(`{${name}} ${t("is required")}`);
    path = path.replace(`{${name}}`, encodeURIComponent(value));
  }
  return path;
}

const done = (action, result) => `${t(action.name)}: ${t("done")}${result && result.status ? ` (${label(result.status)})` : ""}`;

// An answer worth reading (a key issued, a policy decision): its plain fields, ids by the
// name of the list's row they name when there is one.
function showAnswer(action, result) {
  const form = $("action-form");
  const names = Object.fromEntries([...$("list").tBodies[0].rows].map((tr) =>
    [tr.dataset.id, tr.querySelector("td[data-column='name']")?.textContent]).filter(([, n]) => n));
  const rows = Object.entries(result || {}).filter(([, v]) => v !== null && typeof v !== "object");
  const list = el("dl", { id: "answer", "data-action": action.name },
    ...rows.flatMap(([k, v]) => [el("dt", { text: t(k) }),
                                 el("dd", { "data-key": k, text: names[v] ? `${names[v]} (${v})` : formatValue(k, v) })]));
  const close = el("button", { type: "button", text: t("Close") });
  close.addEventListener("click", () => { $("panel").hidden = true; });
  form.replaceChildren(list, el("div", { class: "row" }, close));
  form.onsubmit = (event) => event.preventDefault();
  $("panel-title").textContent = t(action.name);
  $("panel").hidden = false;
}

const destructive = (action) => action.method === "DELETE" || /^(cancel|remove|no_show|lose)/.test(action.name);

async function submitAction(action, form, key, row) {
  clearProblem();
  const confirmed = form.querySelector("[data-confirm] input");
  if (confirmed && !confirmed.checked) {
    throw new Error(`${t(action.name)}: ${t("tick the box to confirm")}`);
  }
  const path = actionPath(action, form, row);
  const fill = (a) => Object.fromEntries(Object.entries(a.fill || {}).map(([f, c]) => [f, row && row[c]]));
  const body = action.schema ? { ...collect(form), ...fill(action) } : undefined;
  const headers = action.method === "POST" ? { "Idempotency-Key": key } : {};
  if (form.dataset.etag) headers["If-Match"] = form.dataset.etag;
  // the follow-up's fields are read before the form goes (a check-in's key type)
  const then = state.def.actions.find((a) => a.name === action.then);
  const group = form.querySelector("[data-then]");
  const next = then && group ? collect(group) : {};
  const result = await call(action.method, path, body, headers);
  let said = done(action, result);
  let answer = action.answer ? [action, result] : null;
  if (then && Object.keys(next).length) {
    try {
      const out = await call(then.method, actionPath(then, form, row), { ...next, ...fill(then) },
                             { "Idempotency-Key": `${key}:${then.name}` });
      said += ` · ${done(then, out)}`;
      if (then.answer) answer = [then, out];
    } catch (error) {  // the first is done: say so, and why the second was refused
      notice(said);
      state.cursor = null;
      await loadList();
      throw error;
    }
  }
  $("panel").hidden = true;
  state.cursor = null;
  state.cursors = [];
  await loadList();  // the notice comes with the list as the change left it
  notice(said);
  if (answer) showAnswer(...answer);
}

async function main() {
  // Escape closes the open form (keyboard use)
  $("panel").addEventListener("keydown", (event) => {
    if (event.key === "Escape") { $("panel").hidden = true; }
  });
  try {
    await loadProperties().catch(report);  // without properties:read: pages still work
    setLanguage(initialLanguage(property().languages));
    renderLanguages();
    const pages = await loadPages();
    relabel();
    window.addEventListener("hashchange", () => showPage(location.hash.slice(1)).catch(report));
    const wanted = location.hash.slice(1);
    await showPage(pages.some((p) => p.page === wanted) ? wanted : (pages[0] || {}).page);
  } catch (error) {
    report(error);
  }
  document.body.dataset.ready = "1";
}

main();
