/**
 * The `--data-dir` / `--config` pair of the commands that work on an agent's data directory (consent,
 * adapters, keys): which directory, and the agent config when one is named, read once per command.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { say } from './say.js';
import { defaultDataDir, loadAgentConfig, type AgentConfig } from '../config/agent-config.js';

/** The options those commands take. */
export interface DirOpts {
  dataDir?: string;
  config?: string;
}

const loaded = new WeakMap<DirOpts, AgentConfig>();

/** The agent config named by `--config` (read and checked once per command), if any. */
export function configOf(o: DirOpts): AgentConfig | undefined {
  if (!o.config) return undefined;
  let c = loaded.get(o);
  if (!c) {
    c = loadAgentConfig(o.config);
    loaded.set(o, c);
  }
  return c;
}

/** `--data-dir`, else the config's `data_dir`, else the default data directory. */
export function dataDirOf(o: DirOpts): string {
  if (o.dataDir) return path.resolve(o.dataDir);
  return configOf(o)?.data_dir ?? defaultDataDir();
}

/** Adds `--data-dir` and `--config`; `configUse` says what the config is read for. */
export function withDirOptions(c: Command, configUse = 'data_dir'): Command {
  return c.option('--data-dir <dir>', say('cli.help.opt.data_dir')).option('--config <file>', say('cli.help.opt.config', { what: configUse }));
}

/** The demo's agent data directory, relative to the folder `npm start` runs in. */
export const DEMO_DATA_DIR = path.join('.demo', 'agent-data');

/** Which data directory a command acts on, and how it was chosen (said to the user when it was not named). */
export interface ChosenDataDir {
  dir: string;
  /** 'option' (--data-dir or --config), 'demo' (the demo's, found in this folder) or 'default'. */
  from: 'option' | 'demo' | 'default';
}

/**
 * `--data-dir` or `--config` when given; otherwise the demo's agent when the command runs where the
 * demo keeps it (`npm start` from the repository), else the default data directory. `status` and the
 * user's controls choose alike, so `pause` acts on the agent `status` shows.
 */
export function chooseDataDir(o: DirOpts): ChosenDataDir {
  if (o.dataDir || o.config) return { dir: dataDirOf(o), from: 'option' };
  if (existsSync(DEMO_DATA_DIR)) return { dir: path.resolve(DEMO_DATA_DIR), from: 'demo' };
  return { dir: defaultDataDir(), from: 'default' };
}
