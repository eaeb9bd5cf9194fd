// Forms generated from a JSON Schema (the msgspec-generated schema of a route's body). A field
// with `x-lov` becomes a select whose options come from GET /v1/lov/{list}, with search and
// paging ("more"). Nothing here knows a page: the schema says it all.

import { call, nextCursor, query } from "./api.js";
import { label, t } from "./i18n.js";

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  node.append(...children);
  return node;
}
export { el };

function resolve(schema, root) {
  let node = schema || {};
  for (let hops = 0; node.$ref && hops < 20; hops++) {
    const name = node.$ref.split("/").pop();
    node = { ...((root.$defs || {})[name] || {}), ...node, $ref: undefined };
  }
  const options = node.anyOf || node.oneOf;
  if (options) {  // Optional[X]: X; a real union: JSON text
    const real = options.filter((o) => o.type !== "null");
    if (real.length === 1) return { ...resolve(real[0], root), ...strip(node), nullable: true };
    return { ...strip(node), type: "json" };
  }
  return node;
}
const strip = (n) => Object.fromEntries(Object.entries(n).filter(([k]) => !["anyOf", "oneOf"].includes(k)));

// The control a field gets, from its schema (and its name for the pickers of ids: a property,
// a company, the properties of a rule). Objects and lists of objects are nested forms.
function kind(field, root = {}, name = "", options = {}) {
  if (field["x-lov"]) return field.type === "array" ? "lov-many" : "lov";
  if (field.enum) return "enum";
  const type = Array.isArray(field.type) ? field.type.find((t) => t !== "null") : field.type;
  if (type === "array") {
    const items = resolve(field.items || {}, root);
    if (items.enum) return "enum-many";
    if (items.format === "uuid" && name === "property_ids" && options.properties) return "properties";
    if ((options.suggestions || {})[name]) return "suggest-many";
    if (["string", "integer", "number"].includes(items.type)) return "list";
    if (items.type === "object" && items.properties) return "objects";
    return "json";
  }
  if (type === "object" && field.properties) return "object";
  if (type === "object" && (field.additionalProperties || {}).type === "string") return "map";
  if (type === "object" || type === "json" || !type) return "json";
  if (field.format === "uuid" && name === "property_id" && options.properties) return "property";
  if (field.format === "uuid" && name === "company_profile_id") return "company";
  return type;  // string, integer, number, boolean
}

// A field that takes an id (format uuid) gets the value's `id` (a catalog row's), else its code.
const takesId = (field) => (field.format || (field.items || {}).format) === "uuid";

async function fillLov(select, list, parent, more, useId) {
  const search = select.closest(".lov").querySelector("input[type=search]");
  const params = { limit: 20, parent, q: search.value.trim() || undefined,
                   cursor: more ? select.dataset.cursor : undefined };
  const page = await call("GET", `/v1/lov/${encodeURIComponent(list)}${query(params)}`);
  if (!more) {
    const keep = [...select.selectedOptions].map((o) => o.value);
    select.replaceChildren(...(select.multiple ? [] : [el("option", { value: "", text: "" })]));
    for (const value of keep.filter(Boolean)) select.append(el("option", { value, text: value, selected: true }));
  }
  const have = new Set([...select.options].map((o) => o.value));
  for (const item of page.data || []) {
    const value = useId && item.id ? item.id : item.code;
    if (have.has(value)) continue;
    select.append(el("option", { value, text: `${item.name} (${item.code})` }));
  }
  select.dataset.cursor = nextCursor(page) || "";
  select.closest(".lov").querySelector("button").disabled = !nextCursor(page);
}

function lovControl(name, field, parent, multiple, report) {
  const select = el("select", { name, "data-lov": field["x-lov"], multiple });
  const search = el("input", { type: "search", placeholder: "search", "aria-label": `search ${name}`, size: 8 });
  const more = el("button", { type: "button", text: "more", disabled: true });
  const box = el("span", { class: "lov" }, search, select, more);
  const load = (next) => fillLov(select, field["x-lov"], parent, next, takesId(field)).catch(report);
  let timer = null;  // search as one types (debounced); Enter searches, never submits the form
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => load(false), 300); });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { event.preventDefault(); clearTimeout(timer); load(false); }
  });
  more.addEventListener("click", () => load(true));
  queueMicrotask(() => load(false));
  return box;
}

// A room picker: the property's rooms from the room board (GET .../housekeeping), by number,
// floor and status; `vacantClean` offers only the rooms one can check a guest into now (of the
// booked room type, when the row names it).
async function fillRooms(select, parent, vacantClean, roomType) {
  const rooms = [];
  let cursor = null;
  for (let pages = 0; pages < 10; pages++) {
    const page = await call("GET", `/v1/properties/${encodeURIComponent(parent)}/housekeeping${query({ limit: 200, cursor })}`);
    rooms.push(...(page.data || []));
    cursor = nextCursor(page);
    if (!cursor) break;
  }
  const offered = rooms.filter((r) => !vacantClean || (r.status === "VACANT" && ["CLEAN", "INSPECTED"].includes(r.hk_status)
                                                      && (!roomType || r.room_type_id === roomType)));
  const keep = select.value;
  select.replaceChildren(el("option", { value: "", text: "" }), ...offered.map((r) => el("option", {
    value: r.room_number, selected: r.room_number === keep,
    text: `${r.room_number} · ${t("floor")} ${r.floor ?? "?"} · ${label(r.status)} · ${label(r.hk_status)}` })));
  select.dataset.loaded = "1";
}

function roomControl(name, value, parent, vacantClean, roomType, report) {
  const select = el("select", { name, "data-rooms": vacantClean ? "vacant-clean" : "all", "aria-label": t(name) });
  if (value) select.append(el("option", { value, text: value, selected: true }));
  queueMicrotask(() => fillRooms(select, parent, vacantClean, roomType).catch(report));
  return select;
}

// A card on file: the guest's stored payment methods (payments-service references) by brand,
// last four digits and expiry; the reference is what is sent.
function cardControl(name, value, parent, profileId, report) {
  const select = el("select", { name, "data-picker": "card", "aria-label": t(name) }, el("option", { value: "", text: "" }));
  if (value) select.append(el("option", { value, text: value, selected: true }));
  queueMicrotask(async () => {
    try {
      const page = await call("GET", `/v1/properties/${encodeURIComponent(parent)}/profiles/${encodeURIComponent(profileId)}/payment-methods?limit=50`);
      for (const m of page.data || []) {
        if (m.payment_method_id === value) continue;
        const card = [m.brand, m.last4 ? `•••• ${m.last4}` : "", m.exp_month ? `${m.exp_month}/${m.exp_year}` : ""].filter(Boolean).join(" ");
        select.append(el("option", { value: m.payment_method_id, text: card || m.label || m.payment_method_id }));
      }
      if (!value && select.options.length === 2) select.selectedIndex = 1;  // the one card on file
    } catch (error) { report(error); }
    select.dataset.loaded = "1";
  });
  return select;
}

// A company by name (GET /v1/admin/companies): what is sent is its id.
export function companyControl(name, value, report) {
  const select = el("select", { name, "data-picker": "company", "aria-label": t("company") },
                    el("option", { value: "", text: "" }));
  queueMicrotask(async () => {
    try {
      const page = await call("GET", "/v1/admin/companies?limit=200");
      for (const c of (page.data || []).sort((a, b) => String(a.company_name).localeCompare(String(b.company_name)))) {
        select.append(el("option", { value: c.id, text: c.company_name || c.email || c.id, selected: c.id === value }));
      }
    } catch (error) { report(error); }
    select.dataset.loaded = "1";
  });
  return select;
}

function propertyControl(name, value, properties, multiple) {
  const chosen = new Set((Array.isArray(value) ? value : [value]).filter(Boolean).map(String));
  return el("select", { name, multiple, "data-picker": "property", "aria-label": t(name) },
    ...(multiple ? [] : [el("option", { value: "", text: "" })]),
    ...properties.map((p) => el("option", { value: p.id, selected: chosen.has(p.id),
                                            text: `${p.propertyCode || p.property_code || p.code || ""} ${p.name || ""}`.trim() || p.id })));
}

function manyControl(name, values, chosen, labelled) {
  const have = new Set((chosen || []).map(String));
  const extra = [...have].filter((v) => !values.includes(v));  // kept as it is (a pattern)
  return el("select", { name, multiple: true, size: Math.min(8, values.length + extra.length) || 1,
                        "aria-label": t(name) },
    ...[...values, ...extra].map((v) => el("option", { value: v, text: labelled ? label(v) : v, selected: have.has(v) })));
}

// A nested object: its fields in a group of their own; a list of objects: one group per item,
// with add and remove.
function objectControl(name, field, root, value, parent, report, options) {
  const box = el("fieldset", { "data-group": name }, el("legend", { text: t(name) }));
  renderFields(box, { ...field, $defs: root.$defs }, null, value || null, parent, report, options);
  return box;
}

function objectsControl(name, field, root, value, parent, report, options) {
  const items = resolve(field.items || {}, root);
  const list = el("div", { class: "items", "data-items": name });
  const add = el("button", { type: "button", "data-add": name, text: `${t("add")} ${t(name.replace(/s$/, ""))}` });
  const addItem = (v) => {
    const item = el("fieldset", { "data-group": name, "data-item": "1" },
                    el("legend", { text: `${t(name.replace(/s$/, ""))} ${list.children.length + 1}` }));
    renderFields(item, { ...items, $defs: root.$defs }, null, v || null, parent, report, options);
    const remove = el("button", { type: "button", "data-remove": name, text: t("remove") });
    remove.addEventListener("click", () => item.remove());
    item.append(remove);
    list.append(item);
  };
  for (const v of Array.isArray(value) ? value : []) addItem(v);
  if (!list.children.length) addItem(null);  // the first one is ready to fill
  add.addEventListener("click", () => addItem(null));
  return el("div", { class: "objects" }, list, add);
}

function control(name, field, value, parent, report, options = {}, root = {}) {
  const k = kind(field, root, name, options);
  const shown = value === undefined || value === null ? "" : value;
  if (k === "object") return objectControl(name, field, root, value, parent, report, options);
  if (k === "objects") return objectsControl(name, field, root, value, parent, report, options);
  if (k === "property" || k === "properties") {
    return propertyControl(name, shown || (k === "property" ? parent : ""), options.properties, k === "properties");
  }
  if (k === "company") return companyControl(name, shown, report);
  if (k === "enum-many") {
    return manyControl(name, resolve(field.items, root).enum.filter((v) => v !== null), shown || [], true);
  }
  if (k === "suggest-many") return manyControl(name, options.suggestions[name], shown || [], false);
  if (k === "map") {
    return el("input", { name, placeholder: "name=value, name=value",
                         value: shown ? Object.entries(shown).map(([a, b]) => `${a}=${b}`).join(", ") : "" });
  }
  if (name === "room_number" && k === "string" && parent) {
    // a room to move to or check in to is a new one: the stay's own is not offered
    return roomControl(name, options.vacantClean ? "" : shown, parent, Boolean(options.vacantClean),
                       options.roomTypeId, report);
  }
  if (name === "payment_method_id" && options.profileId && parent) {
    return cardControl(name, shown, parent, options.profileId, report);
  }
  if (k === "lov" || k === "lov-many") {
    const box = lovControl(name, field, parent, k === "lov-many", report);
    const select = box.querySelector("select");
    for (const v of (Array.isArray(shown) ? shown : [shown]).filter((v) => v !== "")) {
      select.append(el("option", { value: v, text: v, selected: true }));
    }
    return box;
  }
  if (k === "enum") {
    return el("select", { name }, el("option", { value: "", text: "" }),
      ...field.enum.filter((v) => v !== null).map((v) => el("option", { value: v, text: label(v), selected: v === shown })));
  }
  if (k === "boolean") return el("input", { type: "checkbox", name, checked: shown === true });
  if (k === "integer" || k === "number") {
    return el("input", { type: "number", name, value: shown, step: k === "integer" ? 1 : "any",
                         min: field.minimum, max: field.maximum });
  }
  if (k === "list") return el("input", { name, value: Array.isArray(shown) ? shown.join(", ") : shown, placeholder: "a, b, c" });
  if (k === "json") {
    const area = el("textarea", { name, placeholder: "JSON" });
    area.value = shown === "" ? "" : JSON.stringify(shown, null, 1);
    return area;
  }
  const type = field.format === "date" ? "date" : field.format === "email" ? "email" : "text";
  return el("input", { type, name, value: shown, maxlength: field.maxLength,
                       placeholder: field.format || undefined });
}

// The form's fields in layout order (a JSON Forms style ui schema: rows of controls), each with
// its generated control. Returns the nodes; `values` prefill (a row being edited).
export function renderFields(form, schema, uiSchema, values, parent, report, options = {}) {
  const root = schema || {};
  const props = root.properties || {};
  const required = new Set(root.required || []);
  const order = [];
  for (const row of (uiSchema && uiSchema.elements) || []) {
    order.push((row.elements || [row]).map((c) => (c.scope || "").split("/").pop()).filter((n) => n in props));
  }
  const placed = new Set(order.flat());
  for (const name of Object.keys(props)) if (!placed.has(name)) order.push([name]);
  for (const names of order) {
    const row = el("div", { class: "row" });
    for (const name of names) {
      const field = resolve(props[name], root);
      const k = kind(field, root, name, options);
      const given = values && name in values ? values[name] : (options.defaults || {})[name] ?? field.default;
      const box = el(k === "object" || k === "objects" ? "div" : "label",
                     { title: field.description || field.title || undefined, class: "field" },
        `${t(name)}${required.has(name) ? " *" : ""}`,
        control(name, field, given, parent, report, options, root));
      box.dataset.field = name;
      box.dataset.kind = k;
      box.dataset.required = required.has(name) ? "1" : "";
      row.append(box);
    }
    form.append(row);
  }
}

// Nothing typed or picked in the group (a checkbox alone does not count).
const blank = (group) => ![...group.querySelectorAll("input, select, textarea")].some((i) =>
  i.type !== "checkbox" && i.type !== "search" && (i.multiple ? i.selectedOptions.length > 0 : i.value.trim() !== ""));

// The body the fields hold: empty optional fields are left out (the API's defaults apply).
// `group` is the form or a nested group (an object's fieldset): its own fields only.
export function collect(group) {
  const body = {};
  const own = (node) => node.parentElement.closest("[data-group], form") === group;
  for (const label of group.querySelectorAll("[data-field]")) {
    if (!own(label)) continue;
    const name = label.dataset.field;
    const input = label.querySelector("[name]");
    const k = label.dataset.kind;
    let value;
    if (k === "boolean") value = input.checked;
    else if (k === "object") {
      const inner = label.querySelector("[data-group]");
      if (blank(inner) && !label.dataset.required) continue;  // an optional object not filled in
      value = collect(inner);
    } else if (k === "objects") {
      value = [...label.querySelectorAll("[data-item]")]
        .filter((item) => item.closest("[data-field]") === label && !blank(item))
        .map((item) => collect(item));
    } else if (["lov-many", "enum-many", "suggest-many", "properties"].includes(k)) {
      value = [...input.selectedOptions].map((o) => o.value).filter(Boolean);
      if (!value.length && !label.dataset.required) continue;
    } else if (k === "map") {
      const raw = input.value.trim();
      if (!raw) continue;
      value = {};
      for (const pair of raw.split(",").map((s) => s.trim()).filter(Boolean)) {
        const at = pair.indexOf("=");
        if (at < 1) throw new Error(`${name}: "${pair}" is not name=value`);
        value[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
      }
    } else {
      const raw = input.value.trim();
      if (raw === "") {  // a required list left empty is the empty list, never ""
        if (label.dataset.required) body[name] = k === "list" ? [] : "";
        continue;
      }
      if (k === "integer" || k === "number") value = Number(raw);
      else if (k === "list") value = raw.split(",").map((s) => s.trim()).filter(Boolean);
      else if (k === "json") {
        try { value = JSON.parse(raw); } catch { throw new Error(`${name}: not valid JSON`); }
      } else value = raw;
    }
    body[name] = value;
  }
  return body;
}
