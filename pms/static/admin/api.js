// Every call of the console goes to the gated /v1 routes. The console holds no token: behind the
// gateway the gateway adds the bearer; on `pms-cli serve`'s embedded default the server plays
// the gateway's part for requests that carry the X-PMS-Console mark from the loopback interface.

export class Problem extends Error {
  constructor(status, body) {
    super((body && (body.detail || body.title)) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

// A resource as it is now and its ETag (the If-Match of the replace that follows).
export async function current(url) {
  const resp = await fetch(url, { headers: { "Accept": "application/json", "X-PMS-Console": "1" },
                                  credentials: "same-origin" });
  if (!resp.ok) return null;  // nothing to start from (none stored yet): the form opens empty
  return { body: await resp.json(), etag: resp.headers.get("ETag") };
}

export async function call(method, url, body, extra = {}) {
  const headers = { "Accept": "application/json, application/problem+json", "X-PMS-Console": "1", ...extra };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(url, init);
  } catch (error) {  // no answer at all (the server unreachable): say which request
    throw new Error(`${method} ${url}: ${error.message} (no answer from the server)`);
  }
  const text = await resp.text();
  let parsed = null;
  if (text) {
    try { parsed = JSON.parse(text); } catch { parsed = { title: text.slice(0, 300) }; }
  }
  if (!resp.ok) throw new Problem(resp.status, parsed);
  return parsed;
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// next_cursor (snake) or nextCursor (camel): lists answer in either spelling
export const nextCursor = (page) => (page && (page.next_cursor ?? page.nextCursor)) || null;
