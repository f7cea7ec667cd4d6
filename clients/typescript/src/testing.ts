// Test helpers (import "@toold/client/testing"): start a real toold on a
// temp unix socket (and optionally TCP), poll for conditions.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

/** $TOOLD_BIN, else bin/toold of the first directory above this file that has one. */
export function tooldBinary(): string {
  if (process.env.TOOLD_BIN) return process.env.TOOLD_BIN;
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const p = path.join(dir, "bin", "toold");
    if (fs.existsSync(p)) return p;
    if (path.dirname(dir) === dir) throw new Error("no toold binary: run `make build` or set TOOLD_BIN");
  }
}

export interface TooldOptions {
  mode?: string;
  tcp?: boolean;
  token?: string;
  policy?: string;
  extra?: string[];
}

/** A toold process with its own temp dir, workspace and socket. */
export class Toold {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), "toold-ts-"));
  readonly workspace = path.join(this.dir, "ws");
  readonly socket = path.join(this.dir, "toold.sock");
  address = "";
  private proc!: ChildProcess;
  private logText = "";
  private exited: Promise<void> = Promise.resolve();

  static async start(opts: TooldOptions = {}): Promise<Toold> {
    const t = new Toold();
    await t.run(opts);
    return t;
  }

  private async run(opts: TooldOptions) {
    fs.mkdirSync(this.workspace);
    // Its own state directory: never the user's, and one toold per state
    // directory (toold refuses a second).
    const args = ["--socket", this.socket, "--workspace", this.workspace, "--approval-mode", opts.mode ?? "auto",
      "--state-dir", path.join(this.dir, "state")];
    if (opts.tcp) args.push("--listen", "127.0.0.1:0");
    if (opts.policy !== undefined) {
      const p = path.join(this.dir, "policy.yaml");
      fs.writeFileSync(p, opts.policy);
      args.push("--policy", p);
    }
    args.push(...(opts.extra ?? []));
    const env = { ...process.env };
    delete env.TOOLD_TOKEN;
    delete env.TOOLD_SOCKET;
    if (opts.token) env.TOOLD_TOKEN = opts.token;
    this.proc = spawn(tooldBinary(), args, { env, stdio: ["ignore", "pipe", "pipe"] });
    this.exited = new Promise((res) => this.proc.once("exit", () => res()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`toold did not start in 20s:\n${this.logText}`)), 20_000);
      const onData = (b: Buffer) => {
        this.logText += b.toString();
        if (this.logText.includes("toold serving")) {
          const m = /toold serving.*? tcp=(\S+)/.exec(this.logText);
          this.address = m ? m[1] : "";
          clearTimeout(timer);
          resolve();
        }
      };
      this.proc.stdout!.on("data", onData);
      this.proc.stderr!.on("data", onData);
      this.proc.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`toold exited (${code}):\n${this.logText}`));
      });
    });
  }

  log(): string {
    return this.logText;
  }

  /** SIGKILL: the daemon goes away without a word. */
  async kill(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGKILL");
    await this.exited;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
      const t = setTimeout(() => this.proc.kill("SIGKILL"), 20_000);
      await this.exited;
      clearTimeout(t);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Polls cond() until it is true or the deadline passes. */
export async function waitFor(cond: () => boolean, what = "condition", timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export function readText(p: string): string {
  try {
    return fs.readFileSync(p, "utf8");
  } catch {
    return "";
  }
}

let sleepSeq = 0;

/** A unique argument for `sleep` (60 s and a bit), to find the command's
 * process from outside: inside toold's sandbox `$$` is the sandbox's pid. */
export function sleepArg(): string {
  sleepSeq++;
  return `60.${process.pid}${String(sleepSeq).padStart(4, "0")}`;
}

/** The pid (in this pid namespace) of the `sleep ARG` process, or 0. */
export function hostPid(arg: string): number {
  const want = `sleep\0${arg}\0`;
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/cmdline`, "latin1").endsWith(want)) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return 0;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readText(`/proc/${pid}/stat`);
  return stat !== "" && stat.split(") ")[1]?.[0] !== "Z";
}

/** Kills pid if it is still there; a process that ended meanwhile (ESRCH) is not an error. */
export function killIfAlive(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}

/** How many sockets this process has open (from /proc/self/fd). */
export function openSockets(): number {
  let n = 0;
  for (const fd of fs.readdirSync("/proc/self/fd")) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith("socket:")) n++;
    } catch {
      // closed while we looked
    }
  }
  return n;
}
