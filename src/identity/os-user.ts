/** The name of the OS user running this process. */
import { userInfo } from 'node:os';

/** The login name, or undefined where the user has no passwd entry (containers run with an arbitrary uid). */
export function osUserName(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}
