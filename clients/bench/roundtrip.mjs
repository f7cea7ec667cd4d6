// Round trip of a no-op call (think) with the TypeScript client; prints p50/p99 as JSON.
import { parseArgs } from "node:util";
import { connect } from "../typescript/dist/index.js";

const { values } = parseArgs({ options: { socket: { type: "string", default: "./toold.sock" }, n: { type: "string", default: "2000" }, warmup: { type: "string", default: "200" } } });
const n = Number(values.n);
const warm = Number(values.warmup);
const client = connect({ socket: values.socket });
const s = client.session();
const lat = [];
for (let i = 0; i < warm + n; i++) {
  const start = process.hrtime.bigint();
  const r = await s.call("think", '{"thought":"x"}');
  if (!r.success) throw new Error(`call failed: ${r.error?.message}`);
  if (i >= warm) lat.push(Number(process.hrtime.bigint() - start) / 1000);
}
await client.close();
lat.sort((a, b) => a - b);
console.log(JSON.stringify({ p50_us: lat[Math.floor(lat.length / 2)], p99_us: lat[Math.floor((lat.length * 99) / 100)], n: lat.length }));
