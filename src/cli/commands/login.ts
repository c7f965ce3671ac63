/**
 * CLI commands for device login: `login --bridge URL`, `logout`, and `hash-password` (for bridge
 * administrators writing `users[].password_hash` into the bridge config).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { say } from '../say.js';
import { hashPassword } from '../../base/password.js';
import { defaultDataDir } from '../../config/agent-config.js';
import { login, LoginError, logout } from '../../identity/login-client.js';
import { readLoginState } from '../../identity/login-state.js';
import { openSecretStore, SecretStoreUnavailableError } from '../../identity/secret-store.js';
import { APP_VERSION } from '../../version.js';
import { OAuthClientError } from '../../identity/oauth-client.js';
import { localeFromEnv } from '../../i18n/index.js';
import { errorText } from '../../i18n/said.js';

interface LoginFlags {
  bridge: string;
  dataDir?: string;
  deviceName?: string;
  tokenFile?: string;
  browser: boolean;
  qr: boolean;
}

interface LogoutFlags {
  dataDir?: string;
  tokenFile?: string;
}

// Known, user-facing failures end with their one-sentence message and exit code 1 (130 when cancelled), at once:
// a login may leave a poll timer or a keychain handle behind. Anything else goes to main's handler.
function fail(e: unknown): never {
  if (e instanceof LoginError || e instanceof SecretStoreUnavailableError || e instanceof OAuthClientError) {
    // A login's own failures and the keychain's are sentences of the catalogue; the bridge's come as they are.
    process.stderr.write(`${errorText(e, localeFromEnv())}\n`);
    process.exit(e instanceof LoginError && e.code === 'cancelled' ? 130 : 1);
  }
  throw e;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** Adds `login`, `logout` and `hash-password` to the program. */
export function registerLoginCommands(program: Command): void {
  program
    .command('login')
    .description(say('cli.help.login'))
    .requiredOption('--bridge <url>', say('cli.help.login.bridge'))
    .option('--data-dir <dir>', say('cli.help.login.data_dir'))
    .option('--device-name <name>', say('cli.help.login.device_name'))
    .option('--token-file <file>', say('cli.help.login.token_file'))
    .option('--no-browser', say('cli.help.login.no_browser'))
    .option('--no-qr', say('cli.help.login.no_qr'))
    .action(async (o: LoginFlags) => {
      const controller = new AbortController();
      const onSigint = (): void => controller.abort();
      process.once('SIGINT', onSigint);
      try {
        const store = await openSecretStore({ tokenFile: o.tokenFile ? resolve(o.tokenFile) : undefined });
        await login({
          bridgeUrl: o.bridge,
          dataDir: o.dataDir ? resolve(o.dataDir) : defaultDataDir(),
          store,
          clientVersion: APP_VERSION,
          ...(o.deviceName ? { deviceName: o.deviceName } : {}),
          ...(o.browser ? {} : { openBrowser: false }),
          qr: o.qr,
          signal: controller.signal,
        });
      } catch (e) {
        fail(e);
      } finally {
        process.off('SIGINT', onSigint);
      }
    });

  program
    .command('logout')
    .description(say('cli.help.logout'))
    .option('--data-dir <dir>', say('cli.help.logout.data_dir'))
    .option('--token-file <file>', say('cli.help.logout.token_file'))
    .action(async (o: LogoutFlags) => {
      try {
        const dataDir = o.dataDir ? resolve(o.dataDir) : defaultDataDir();
        const state = await readLoginState(dataDir);
        // The login recorded where it put the tokens, so a headless logout needs no flag.
        const recorded = state && typeof state.secret_store === 'object' ? state.secret_store.token_file : undefined;
        const store = await openSecretStore({ tokenFile: o.tokenFile ? resolve(o.tokenFile) : recorded });
        await logout({ dataDir, store });
      } catch (e) {
        fail(e);
      }
    });

  program
    .command('hash-password')
    .description(say('cli.help.hash_password'))
    .action(async () => {
      const pw = await readStdin();
      if (!pw) {
        process.stderr.write(say('cli.login.pipe_password') + '\n');
        process.exit(2);
      }
      process.stdout.write((await hashPassword(pw)) + '\n');
    });
}
