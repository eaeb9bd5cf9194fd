// The console's two languages, English and German: labels of pages, columns, fields, actions
// and states, and dates and amounts formatted per language (Intl). The language is the one
// picked in the header, else the property's first of `languages`, else English. A key with no
// translation is shown as it is spelled, underscores as spaces: nothing is ever hidden.

const DE = {
  // pages
  reservations: "Reservierungen", frontdesk: "Rezeption", folios: "Folios",
  housekeeping: "Housekeeping", rates: "Ratenpläne", blocks: "Zimmerkontingente",
  events: "Veranstaltungen", profiles: "Gästeprofile", reports: "Berichte",
  settings: "Einstellungen", "external-systems": "Externe Systeme",
  "lists-of-values": "Wertelisten", companies: "Firmen", company_users: "Firmennutzer",
  negotiated_rates: "Firmenraten", "kiosk-config": "Kiosk-Konfiguration",
  "corporate-accounts": "Firmenkonten", policies: "Richtlinien",
  // chrome
  Property: "Haus", Language: "Sprache", Pages: "Seiten", Filter: "Filtern", First: "Erste",
  Next: "Weiter", Close: "Schließen", actions: "Aktionen", shown: "angezeigt",
  "about {n} in all": "etwa {n} insgesamt", done: "erledigt", floor: "Etage", run: "ausführen",
  search: "suchen", more: "mehr", "arrivals today": "Anreisen heute", "in-house": "Im Haus",
  "departures tomorrow": "Abreisen morgen", "all rows": "alle Zeilen", company: "Firma",
  "is required": "ist erforderlich",
  // columns and fields
  id: "ID", name: "Name", path: "Pfad", status: "Status", arrival_date: "Anreise",
  departure_date: "Abreise", guest_last_name: "Nachname", guest_first_name: "Vorname",
  confirmation_number: "Bestätigungsnummer", room_number: "Zimmer", room_type: "Zimmertyp",
  rate_plan: "Ratenplan", property_id: "Haus", kind: "Art", code: "Code", currency: "Währung",
  amount: "Betrag", quantity: "Menge", description: "Beschreibung", method: "Zahlungsart",
  transaction_code: "Buchungscode", hk_status: "Reinigungsstatus", first_name: "Vorname",
  last_name: "Nachname", email: "E-Mail", company_name: "Firmenname", label: "Bezeichnung",
  reason: "Grund", lockdown: "Sperre", max_keys_per_stay: "Schlüssel je Aufenthalt",
  enabled_modes: "Aktive Modi", add_on_package_codes: "Zusatzpakete", folio_type: "Folio-Art",
  business_date: "Geschäftstag", assignee: "Zuständig", adults: "Erwachsene", children: "Kinder",
  // actions
  create: "anlegen", edit: "bearbeiten", cancel: "stornieren", walk_in: "Walk-in",
  check_in: "einchecken", check_out: "auschecken", no_show: "No-Show",
  assign_room: "Zimmer zuweisen", post_charge: "Belastung buchen",
  post_payment: "Zahlung buchen", set_room_status: "Zimmerstatus setzen",
  create_task: "Aufgabe anlegen", update_task: "Aufgabe ändern", configure: "konfigurieren",
  approve_payment_method: "Zahlungsart freigeben", reject_payment_method: "Zahlungsart ablehnen",
  issue_key: "Schlüssel ausgeben", move_room: "Zimmer wechseln", add_policy: "Richtlinie anlegen",
  edit_policy: "Richtlinie bearbeiten", remove_policy: "Richtlinie löschen",
  would_this_be_allowed: "Wäre das erlaubt?", optional: "optional", add: "hinzufügen",
  remove: "entfernen", rule: "Regel", rules: "Regeln", effect: "Wirkung", scopes: "Berechtigungen",
  decision: "Entscheidung", key_type: "Schlüsselart", enabled: "aktiv",
  default_effect: "Standardwirkung", guest: "Gast", valid_until: "gültig bis",
  valid_from: "gültig ab", credential_ref: "Schlüsselreferenz", client_kinds: "Client-Arten",
  property_ids: "Häuser", subjects: "Subjekte", allow: "erlauben", deny: "verweigern",
  yes: "ja", "tick the box to confirm": "zum Bestätigen das Kästchen ankreuzen",
  lose: "verlieren",
  // states
  CONFIRMED: "bestätigt", CHECKED_IN: "eingecheckt", CHECKED_OUT: "ausgecheckt",
  CANCELLED: "storniert", NO_SHOW: "nicht erschienen", OPEN: "offen", CLOSED: "geschlossen",
  CLEAN: "sauber", DIRTY: "schmutzig", INSPECTED: "geprüft", OUT_OF_ORDER: "außer Betrieb",
  OUT_OF_SERVICE: "gesperrt", VACANT: "frei", OCCUPIED: "belegt", PENDING: "ausstehend",
  APPROVED: "freigegeben", REJECTED: "abgelehnt", SUSPENDED: "ausgesetzt", CARD: "Karte",
  CASH: "bar",
};

const LANGUAGES = { en: "English", de: "Deutsch" };
let language = "en";

export const languages = () => Object.entries(LANGUAGES);
export const currentLanguage = () => language;

export function setLanguage(code) {
  language = code in LANGUAGES ? code : "en";
  document.documentElement.lang = language;
}

// The language to start in: the one picked before, else the property's first known one.
export function initialLanguage(propertyLanguages) {
  let stored = null;
  try { stored = localStorage.getItem("pms-console-language"); } catch { stored = null; }
  if (stored && stored in LANGUAGES) return stored;
  return (propertyLanguages || []).find((code) => code in LANGUAGES) || "en";
}

export function rememberLanguage(code) {
  try { localStorage.setItem("pms-console-language", code); } catch { /* private mode */ }
}

const spelled = (key) => String(key).replaceAll("_", " ");

export function t(key, values = {}) {
  const text = language === "de" && key in DE ? DE[key] : spelled(key);
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in values ? String(values[name]) : m));
}

// A state's or a code's label (the value itself is what is sent).
export const label = (value) => (language === "de" && value in DE ? DE[value] : String(value));

const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

// A cell's text: dates and times in the language's format, states as labels, numbers grouped.
export function formatValue(column, value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  if (typeof value === "number") return new Intl.NumberFormat(language).format(value);
  const text = String(value);
  if (ISO_DATE.test(text)) {
    const [y, m, d] = text.split("-").map(Number);
    return new Intl.DateTimeFormat(language, { dateStyle: "medium", timeZone: "UTC" })
      .format(new Date(Date.UTC(y, m - 1, d)));
  }
  if (ISO_TIME.test(text) && !Number.isNaN(Date.parse(text))) {
    return new Intl.DateTimeFormat(language, { dateStyle: "medium", timeStyle: "short" })
      .format(new Date(text));
  }
  if (column === "status" || column === "hk_status" || column === "method") return label(text);
  return text;
}

// An amount in its currency, in the language's format (decimal strings stay exact to 2 places).
export function formatAmount(amount, currency) {
  const number = Number(amount);
  if (Number.isNaN(number) || !currency) return String(amount ?? "");
  return new Intl.NumberFormat(language, { style: "currency", currency }).format(number);
}
