/**
 * The core's own sentences (src/), in every locale. Handlers keep theirs in handlers/<name>/i18n/*.json.
 * The zh-CN table is typed against the en one, so a key missing from either fails the type-check.
 */
import type { Messages } from './catalogue.js';

/** English core strings. */
export const en = {
  'core.call.generic': 'Run {name}.',
  'core.native.not_installed': '{feature} is not available: the optional module {module} is not installed. Install it (npm install {module}) and restart AIOS Device.',
  'core.native.no_adapter': '{feature} is not available: this device has no {feature} hardware, or its driver is not loaded. Plug in or enable the adapter and try again.',
  'core.native.permission_denied': 'The operating system refused access to {feature} ({code}). Allow AIOS Device to use {feature} in the system settings (on Linux: add the user to the right group or grant the capability), then try again.',
  'core.native.load_failed': '{feature} is not available: the module {module} could not be loaded ({code}). Reinstall AIOS Device or the module.',
  'core.native.unsupported_platform': '{feature} is not supported on this operating system.',
  'core.cli.token_in_argv': 'warning: --token puts the runtime token in the process list, where other users of this machine can read it; use --token-file <file> (or - for stdin), AIOS_RUNTIME_TOKEN or a --runtime profile instead.',
} as const satisfies Messages;

/** A core string key. */
export type CoreKey = keyof typeof en;

/** Simplified Chinese core strings. */
export const zhCN: Record<CoreKey, string> = {
  'core.call.generic': '运行“{name}”。',
  'core.native.not_installed': '{feature} 不可用：未安装可选模块 {module}。请安装（npm install {module}）后重新启动 AIOS Device。',
  'core.native.no_adapter': '{feature} 不可用：本设备没有 {feature} 硬件，或其驱动未加载。请插入或启用适配器后重试。',
  'core.native.permission_denied': '操作系统拒绝访问 {feature}（{code}）。请在系统设置中允许 AIOS Device 使用 {feature}（Linux：将用户加入相应的用户组或授予相应权限），然后重试。',
  'core.native.load_failed': '{feature} 不可用：无法加载模块 {module}（{code}）。请重新安装 AIOS Device 或该模块。',
  'core.native.unsupported_platform': '此操作系统不支持 {feature}。',
  'core.cli.token_in_argv': '警告：--token 会把运行时令牌放进进程列表，本机其他用户都能看到；请改用 --token-file <文件>（- 表示标准输入）、AIOS_RUNTIME_TOKEN 或 --runtime 配置文件。',
};
