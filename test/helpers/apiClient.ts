import { request } from 'node:http';

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  json<T = Record<string, unknown>>(): T;
}

/** One HTTP request with full control of the headers (fetch would not let a test forge Host). */
export function call(base: string, path: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const url = new URL(`${base}${path}`);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: <T>() => JSON.parse(body) as T });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
