/**
 * Character devices on Linux, for handlers that must tell what a device node really is (a serial port, a
 * V4L2 camera) by its `/sys/dev/char/<major>:<minor>` entry rather than by its name.
 */

/** Linux's split of a `dev_t` into major and minor (glibc's gnu_dev_major/gnu_dev_minor). */
export function majorMinor(rdev: number): [number, number] {
  const d = BigInt(rdev);
  const major = Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn));
  const minor = Number((d & 0xffn) | ((d >> 12n) & ~0xffn));
  return [major, minor];
}
