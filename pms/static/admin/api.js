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

// A request that got no answer at all (the connection closed or reset before any response:
// a kept-alive connection the server closed as it was reused, a worker restarted) is sent once
// more when sending it twice changes nothing: a read, or a POST with its Idempotency-Key (the
// API replays the first answer). A replace or a delete is not: its refusal would be
// misleading. A second failure names the request.
async function send(method, url, init) {
  const again = method === "GET" || (method === "POST" && "Idempotency-Key" in init.headers);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, init);
    } catch (error) {
      if (!again || attempt >= 2) {
        throw new Error(`${method} ${url}: ${error.message} (no answer from the server)`);
      }
    }
  }
}

// A resource as it is now and its ETag (the If-Match of the replace that follows).
export async function current(url) {
  const resp = await send("GET", url, { headers: { "Accept": "application/json", "X-PMS-Console": "1" },
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
  const resp = await send(method, url, init);
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
