/**
 * Typed faults of the serial engine, and the one place where the bindings' OS errors are turned into
 * them. The engine has no SDK dependency: the functions file maps a `SerialFault` to a wire error.
 */

/** The wire error types a serial fault can become. */
export type FaultType = 'device_unavailable' | 'device_busy' | 'permission_denied' | 'execution_failed' | 'invalid_arguments';

/** Why a fault happened, for `details.reason` (stable strings, documented in docs/handlers/serial.md). */
export type FaultReason = 'unplugged' | 'held_by_other_program' | 'os_refused' | 'not_supported' | 'bad_settings' | 'io_error' | 'regex_too_slow' | 'not_installed';

/** A typed engine failure; `message` is one sentence with no device data in it. */
export class SerialFault extends Error {
  constructor(
    readonly type: FaultType,
    readonly reason: FaultReason,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'SerialFault';
  }
}

/** Where an OS error came from: opening the port, or I/O on an open one. */
export type FaultStage = 'open' | 'io' | 'signals';

/** The fix for an OS refusal, per platform (the message a user can act on). */
export function permissionFix(platform: NodeJS.Platform, path: string): string {
  if (platform === 'linux') {
    return `The operating system refused access to ${path}: add the user running AIOS Device to the port's group (usually dialout, or uucp on Arch: sudo usermod -aG dialout $USER), then log out and in again.`;
  }
  if (platform === 'darwin') {
    return `The operating system refused access to ${path}: check the port's owner and mode (ls -l ${path}) and that no security software blocks it.`;
  }
  return `Windows refused access to ${path}: check that the port is enabled in Device Manager and that AIOS Device may use it.`;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Turns a bindings error into a fault. The native bindings report errors as messages made from
 * strerror() (Unix) or a fixed text (Windows), so this matches on those words and on errno codes when
 * the JS layer set one. The port path goes into messages (it is configuration, not device data).
 */
export function faultFromOsError(e: unknown, path: string, stage: FaultStage, platform: NodeJS.Platform = process.platform): SerialFault {
  if (e instanceof SerialFault) return e;
  const msg = messageOf(e);
  const code = (e as NodeJS.ErrnoException | undefined)?.code ?? '';
  const has = (re: RegExp) => re.test(msg) || re.test(code);
  if (has(/Cannot lock port|EWOULDBLOCK|EAGAIN|Resource temporarily unavailable|Device or resource busy|Resource busy|EBUSY/i)) {
    return new SerialFault('device_busy', 'held_by_other_program', `${path} is open in another program; close that program (or wait for it) and try again.`, true);
  }
  if (platform === 'win32' && stage === 'open' && has(/Access denied/i)) {
    // Windows opens COM ports exclusively: "Access denied" on open almost always means another program has it.
    return new SerialFault('device_busy', 'held_by_other_program', `${path} is open in another program; close that program (or wait for it) and try again.`, true);
  }
  if (has(/Permission denied|EACCES|EPERM|Operation not permitted|Access denied/i)) {
    return new SerialFault('permission_denied', 'os_refused', permissionFix(platform, path));
  }
  if (has(/Inappropriate ioctl|ENOTTY|not supported/i) && stage !== 'open') {
    return new SerialFault('execution_failed', 'not_supported', `${path} has no modem control lines to read or set (a virtual or pseudo-terminal port).`);
  }
  if (has(/Invalid data bits|Invalid parity|Invalid stop bits|baud rate .*not supported|setting custom baud rate|parameter is incorrect|EINVAL/i)) {
    return new SerialFault('invalid_arguments', 'bad_settings', `${path} does not accept these port settings (baud rate, data bits, parity or stop bits).`);
  }
  if (has(/No such file|ENOENT|File not found|ENXIO|No such device|ENODEV|EIO|Input\/output error|bad file descriptor|EBADF|Invalid handle|Operation aborted|Port is not open|disconnected/i)) {
    return new SerialFault('device_unavailable', 'unplugged', stage === 'open' ? `${path} is not there: the device is unplugged or the path is wrong.` : `${path} went away during the call (the device was unplugged or its driver stopped).`, true);
  }
  return new SerialFault('device_unavailable', 'io_error', `${path} failed with an unexpected input/output error.`, true);
}
