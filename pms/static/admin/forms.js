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

function kind(field) {
  if (field["x-lov"]) return field.type === "array" ? "lov-many" : "lov";
  if (field.enum) return "enum";
  const type = Array.isArray(field.type) ? field.type.find((t) => t !== "null") : field.type;
  if (type === "array") {
    const items = field.items || {};
    return ["string", "integer", "number"].includes(items.type) ? "list" : "json";
  }
  if (type === "object" || type === "json" || !type) return "json";
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

function control(name, field, value, parent, report, options = {}) {
  const k = kind(field);
  const shown = value === undefined || value === null ? "" : value;
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
      const box = el("label", { title: field.description || field.title || undefined },
        `${t(name)}${required.has(name) ? " *" : ""}`,
        control(name, field, values ? values[name] : field.default, parent, report, options));
      box.dataset.field = name;
      box.dataset.kind = kind(field);
      box.dataset.required = required.has(name) ? "1" : "";
      row.append(box);
    }
    form.append(row);
  }
}

// The body the fields hold: empty optional fields are left out (the API's defaults apply).
export function collect(form) {
  const body = {};
  for (const label of form.querySelectorAll("label[data-field]")) {
    const name = label.dataset.field;
    const input = label.querySelector("[name]");
    const k = label.dataset.kind;
    let value;
    if (k === "boolean") value = input.checked;
    else if (k === "lov-many") value = [...input.selectedOptions].map((o) => o.value).filter(Boolean);
    else {
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
