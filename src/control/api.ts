/**
 * The control API, defined once (PROTOCOL.md §8): each control method's wire name, its params and its
 * result as TypeBox schemas, and whether the tray's window may call it. Everything else is derived from
 * this table: the local endpoint's registration and the one params check (server.ts), the Electron IPC
 * channels and the preload's `window.aiosDevice.control` (ipc.ts), and the typed clients of the page and
 * the trial (client.ts). Handlers implement it by key (`ControlHandlers`), in the subsystem that owns the
 * state (consent/, agent/, app/).
 *
 * A plain module (TypeBox only): the window's page and its preload bundle it too.
 * Adding a method: one entry here and one handler; its IPC channel, preload function and client method
 * follow. Wire names never change (other programs call them); new ones follow the same naming.
 */
import {
  Array as ArrayOf,
  Boolean as Bool,
  Integer,
  Intersect,
  Literal,
  Null,
  Number as Num,
  Object as Obj,
  Optional,
  Record as RecordOf,
  String as Str,
  Union,
  Unknown,
  type Static,
  type TObject,
  type TSchema,
} from '@sinclair/typebox';

/** TypeBox's builders this table uses, imported one by one: the page's bundle keeps only these. */
const Type = { Array: ArrayOf, Boolean: Bool, Integer, Intersect, Literal, Null, Number: Num, Object: Obj, Optional, Record: RecordOf, String: Str, Union, Unknown };

/** One control method: its wire name, params, result, and whether the window's IPC offers it. */
export interface ControlMethodSpec<P extends TObject = TObject, R extends TSchema = TSchema> {
  readonly method: string;
  readonly params: P;
  readonly result: R;
  /** False: not offered to the tray's window (its main process answers prompts; the trial's own methods). */
  readonly window: boolean;
}

/**
 * Declares one control method (`window` defaults to true: the tray's window may call it). Its params are
 * closed: a field the table does not name is refused (invalid params), never silently ignored.
 */
export function defineControlMethod<P extends TObject, R extends TSchema>(method: string, params: P, result: R, opts: { window?: boolean } = {}): ControlMethodSpec<P, R> {
  return { method, params: { ...params, additionalProperties: false }, result, window: opts.window ?? true };
}

/** A table of control methods, keyed by the name callers use in code (`client.listGrants()`). */
export type ControlTable = Record<string, ControlMethodSpec>;

const None = Type.Object({});
const Ok = Type.Object({ ok: Type.Boolean() });
/** A short identifier-like string (a kind, a grant id or alias, a function id). */
const Id = (max = 1024) => Type.String({ minLength: 1, maxLength: max });
const Filter = Type.Optional(Type.String({ maxLength: 200 }));

/** The answers a prompt can take (`close`: dismissed, a deny never remembered). */
export const ANSWERS = ['allow_once', 'allow_remember', 'deny', 'deny_remember', 'close'] as const;
/** The log levels Settings offers, quietest last. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
/** How long `control.session.offline` may keep the bridge link down, in seconds. */
export const MAX_OFFLINE_S = 300;

const Risk = Type.Object({
  destructive: Type.Optional(Type.Boolean()),
  physical: Type.Optional(Type.Boolean()),
  read_only: Type.Optional(Type.Boolean()),
  idempotent: Type.Optional(Type.Boolean()),
});

/** A catalogue message: a key and its params (a param may itself be a message). */
export const SaidMessageSchema = Type.Object({ key: Type.String(), params: Type.Optional(Type.Record(Type.String(), Type.Unknown())) });

/** A prompt waiting for the person (control.prompts.list). */
export const PromptViewSchema = Type.Object({
  prompt_id: Type.String(),
  call_id: Type.String(),
  function_id: Type.String(),
  function_name: Type.String(),
  sentence: Type.String(),
  /** The function's title as a key of control.catalogue.get's catalogue (a built-in function's). */
  title_key: Type.Optional(Type.String()),
  /** The sentence as a catalogue message: each screen renders it in its own language (`sentence` is the agent's). */
  sentence_message: Type.Optional(SaidMessageSchema),
  /** True when `sentence` is a third-party adapter's plain string (its own words, shown as written). */
  sentence_own_words: Type.Optional(Type.Boolean()),
  /** Who the runtime says it is: a claim, shown only as "says it is …". */
  requester: Type.Union([Type.Object({ kind: Type.String(), id: Type.Optional(Type.String()), name: Type.Optional(Type.String()) }), Type.Null()]),
  /** The runtime the bridge attested (protocol 1.2 §6.1), named first; null on a 1.1 bridge. */
  runtime: Type.Union([Type.Object({ id: Type.String(), name: Type.String() }), Type.Null()]),
  permission_level: Type.String(),
  risk: Type.Union([Risk, Type.Null()]),
  resources: Type.Array(Type.Object({ kind: Type.String(), id: Type.String(), label: Type.Optional(Type.String()) })),
  remember_any: Type.Boolean(),
  rememberable: Type.Boolean(),
  expires_at: Type.String(),
  /** True for the prompt on screen. */
  active: Type.Boolean(),
  position: Type.Number(),
});

/** A remembered decision (control.decisions.list). */
export const DecisionSchema = Type.Object({
  id: Type.Number(),
  effect: Type.Union([Type.Literal('allow'), Type.Literal('deny')]),
  function_id: Type.String(),
  resource: Type.String(),
  scope: Type.Union([Type.Literal('session'), Type.Literal('always')]),
});

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** One finished call of the audit trail (control.activity.list). */
export const CallRowSchema = Type.Object(
  {
    call_id: Type.String(),
    function_id: Type.String(),
    state: Type.String(),
    error_type: Nullable(Type.String()),
    decision: Nullable(Type.String()),
    decided_by: Nullable(Type.String()),
    remembered: Type.Boolean(),
    requester_kind: Nullable(Type.String()),
    requester_id: Nullable(Type.String()),
    requester_name: Nullable(Type.String()),
    workspace_id: Nullable(Type.String()),
    user_id: Nullable(Type.String()),
    /** The sentence its prompt showed, for a call that was put to the person (kept in memory only). */
    sentence: Type.Optional(Type.String()),
    /** The same sentence as a catalogue message, for the screen to render in its own language. */
    sentence_message: Type.Optional(SaidMessageSchema),
    resources: Nullable(Type.Array(Type.Object({ kind: Type.String(), label: Type.String() }))),
    args_summary: Type.Unknown(),
    accepted_at: Nullable(Type.String()),
    finished_at: Type.String(),
    duration_ms: Nullable(Type.Number()),
  },
  { additionalProperties: Type.Unknown() },
);

/** The pause switch and the prompt queue (control.status, control/notification.status). */
export const ConsentStatusSchema = Type.Object({
  paused: Type.Boolean(),
  paused_since: Nullable(Type.String()),
  paused_by: Nullable(Type.String()),
  provider: Type.String(),
  active_provider: Type.Union([Type.Literal('ui'), Type.Literal('tty'), Type.Literal('none')]),
  prompts_waiting: Type.Number(),
  session_id: Type.String(),
  /** Built-in handlers' own entries (e.g. `media`: captures running, capture page attached), when any. */
  handlers: Type.Optional(Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown()))),
});

/** The sign-in's state (control.signin.*, control/notification.signin). No token, no device code. */
export const SignInViewSchema = Type.Object({
  state: Type.Union(['not_signed_in', 'waiting', 'signed_in', 'denied', 'expired', 'failed'].map((s) => Type.Literal(s))),
  /** The bridge (HTTP origin): the one signed in to, being signed in to, or the config's default. */
  bridge_url: Type.Optional(Type.String()),
  user_code: Type.Optional(Type.String()),
  verification_uri: Type.Optional(Type.String()),
  verification_uri_complete: Type.Optional(Type.String()),
  /** While `waiting`: a PNG data URL of the QR code of `verification_uri_complete`. */
  qr: Type.Optional(Type.String()),
  expires_at: Type.Optional(Type.String()),
  workspace_id: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
  device_id: Type.Optional(Type.String()),
  device_name: Type.Optional(Type.String()),
  /** While `failed`: the code and the English sentence (the page shows its own by code). */
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
  /** control.signout: false when the bridge could not be told. */
  revoked: Type.Optional(Type.Boolean()),
});

/** A shared folder or device (control.grants.list). */
export const GrantViewSchema = Type.Object(
  {
    kind: Type.String(),
    id: Type.String(),
    alias: Type.Optional(Type.String()),
    access: Type.Optional(Type.Union([Type.Literal('read'), Type.Literal('read_write')])),
    /** Where it comes from: the admin config or the person (control.grants.add). */
    source: Type.Optional(Type.Union([Type.Literal('config'), Type.Literal('user')])),
  },
  { additionalProperties: Type.Unknown() },
);

/** A device Settings can offer for a grant kind (control.grants.candidates). */
export const CandidateSchema = Type.Object({ id: Type.String(), label: Type.Optional(Type.String()), alias: Type.Optional(Type.String()) });

/** A function as Settings shows it (control.functions.list). */
export const FunctionViewSchema = Type.Object({
  id: Type.String(),
  /** The descriptor's English name and description (a third-party adapter's own words). */
  name: Type.String(),
  description: Type.String(),
  /** A built-in function's title and one-line description as keys of the catalogue control.catalogue.get serves. */
  title_key: Type.Optional(Type.String()),
  description_key: Type.Optional(Type.String()),
  permission_level: Type.String(),
  confirmation: Type.Unknown(),
  risk: Type.Optional(Risk),
  source: Type.Optional(Type.String()),
  enabled: Type.Boolean(),
  admin_disabled: Type.Boolean(),
});

/** Settings → General and About (control.settings.get). */
export const SettingsViewSchema = Type.Object({
  version: Type.String(),
  /** The version the bridge session speaks; null with no session. */
  protocol_version: Nullable(Type.String()),
  /** The newest version this client offers. */
  protocol_offered: Type.String(),
  data_dir: Type.String(),
  log_file: Nullable(Type.String()),
  logs_dir: Nullable(Type.String()),
  log_level: Nullable(Type.String()),
  log_levels: Type.Array(Type.String()),
  /** Per grant kind with a listing: the key of an object entry that holds the id (`files` takes `path`). */
  grant_id_keys: Type.Record(Type.String(), Type.String()),
});

const SessionAnswer = Type.Object({ ok: Type.Boolean(), status: Type.String(), back_at: Type.Optional(Type.String()) });

/**
 * The control methods, keyed by their name in code. PROTOCOL.md §8 and docs/consent.md describe them;
 * every one needs the local token.
 */
export const CONTROL_API = {
  status: defineControlMethod(
    'control.status',
    None,
    Type.Intersect([
      ConsentStatusSchema,
      Type.Object({
        signin: Type.Optional(SignInViewSchema),
        /** Local adapters running without the sandbox (adapters.unsandboxed: allow), and those waiting for approval. */
        adapters: Type.Optional(Type.Object({ unsandboxed: Type.Array(Type.String()), pending: Type.Array(Type.String()) })),
      }),
    ]),
  ),
  pause: defineControlMethod('control.pause', None, ConsentStatusSchema),
  resume: defineControlMethod('control.resume', None, ConsentStatusSchema),
  listPrompts: defineControlMethod('control.prompts.list', None, Type.Object({ prompts: Type.Array(PromptViewSchema) })),
  promptArguments: defineControlMethod('control.prompts.arguments', Type.Object({ prompt_id: Id(200) }), Type.Object({ prompt_id: Type.String(), arguments: Type.Unknown() })),
  answerPrompt: defineControlMethod(
    'control.prompts.answer',
    Type.Object({
      prompt_id: Id(200),
      answer: Type.Union(ANSWERS.map((a) => Type.Literal(a))),
      /** How long a remembered answer lasts (default: session; `deny_remember`: always). */
      scope: Type.Optional(Type.Union([Type.Literal('session'), Type.Literal('always')])),
      /** What a remembered answer covers: the resources shown, or any resource of the function. */
      resource_scope: Type.Optional(Type.Union([Type.Literal('shown'), Type.Literal('any')])),
    }),
    Ok,
  ),
  // One way to be the one who answers prompts: attach, then heartbeat (docs/consent.md). The window does
  // not attach: the tray's main process answers for it.
  attachAnswerer: defineControlMethod('control.prompts.attach', Type.Object({ name: Type.Optional(Type.String({ maxLength: 100 })) }), Type.Object({ answerer_id: Type.String(), heartbeat_ms: Type.Number(), lapse_ms: Type.Number() }), { window: false }),
  heartbeat: defineControlMethod('control.prompts.heartbeat', Type.Object({ answerer_id: Id() }), Ok, { window: false }),
  detachAnswerer: defineControlMethod('control.prompts.detach', Type.Object({ answerer_id: Id() }), Type.Object({ detached: Type.Boolean() }), { window: false }),
  setFocused: defineControlMethod('control.ui.focus', Type.Object({ focused: Type.Optional(Type.Boolean()) }), Ok),
  listDecisions: defineControlMethod(
    'control.decisions.list',
    Type.Object({ effect: Type.Optional(Type.Union([Type.Literal('allow'), Type.Literal('deny')])), function: Filter }),
    Type.Object({ decisions: Type.Array(DecisionSchema) }),
  ),
  revokeDecision: defineControlMethod('control.decisions.revoke', Type.Object({ id: Type.Integer() }), Type.Object({ revoked: Type.Boolean() })),
  listGrants: defineControlMethod(
    'control.grants.list',
    Type.Object({ kind: Type.Optional(Id(64)) }),
    Type.Object({
      /** Each grant kind the agent knows, and the handler (or `core`) that declared it. */
      kinds: Type.Array(Type.Object({ kind: Type.String(), owner: Type.String() })),
      grants: Type.Record(Type.String(), Type.Array(GrantViewSchema)),
      /** The admin config's grants for the kinds it names (a user may narrow them, never widen). */
      ceilings: Type.Optional(Type.Record(Type.String(), Type.Array(Type.Object({ id: Type.String(), alias: Type.Optional(Type.String()) }, { additionalProperties: Type.Unknown() })))),
    }),
  ),
  /** `entry`: one entry as `grants.<kind>` takes it (its shape is the kind's schema, checked by the grant store). */
  addGrant: defineControlMethod('control.grants.add', Type.Object({ kind: Id(64), entry: Type.Unknown() }), Type.Object({ grant: GrantViewSchema })),
  removeGrant: defineControlMethod('control.grants.remove', Type.Object({ kind: Id(64), id: Id() }), Type.Object({ removed: Type.Boolean() })),
  listActivity: defineControlMethod(
    'control.activity.list',
    Type.Object({
      // Up to the audit list's own cap, so that an export holds every matching call.
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, errorMessage: 'must be an integer from 1 to 10000' })),
      function: Filter,
      state: Filter,
      requester: Filter,
      /** "2h", "7d" or an ISO time. */
      since: Filter,
      /** An ISO time. */
      until: Filter,
    }),
    Type.Object({ calls: Type.Array(CallRowSchema) }),
  ),
  signinStatus: defineControlMethod('control.signin.status', None, SignInViewSchema),
  /** Without `bridge_url`, the config's bridge. */
  signinStart: defineControlMethod('control.signin.start', Type.Object({ bridge_url: Type.Optional(Type.String({ maxLength: 2000 })) }), SignInViewSchema),
  signinCancel: defineControlMethod('control.signin.cancel', None, SignInViewSchema),
  signout: defineControlMethod('control.signout', None, SignInViewSchema),
  grantCandidates: defineControlMethod('control.grants.candidates', Type.Object({ kind: Id(64) }), Type.Object({ kind: Type.String(), candidates: Type.Array(CandidateSchema) })),
  listFunctions: defineControlMethod('control.functions.list', None, Type.Object({ functions: Type.Array(FunctionViewSchema) })),
  setFunction: defineControlMethod(
    'control.functions.set',
    Type.Object({ id: Id(128), enabled: Type.Boolean({ errorMessage: 'must be true or false' }) }),
    Type.Object({ function: Type.Object({ enabled: Type.Boolean() }, { additionalProperties: Type.Unknown() }) }),
  ),
  getSettings: defineControlMethod('control.settings.get', None, SettingsViewSchema),
  /**
   * The agent's sentences a screen renders in its own language: the core catalogue and every loaded
   * handler's, merged for `locale` (English where a key has no translation). What the agent sends as keys
   * (a function's title_key, a prompt's sentence_message) is looked up here.
   */
  i18nCatalogue: defineControlMethod(
    'control.catalogue.get',
    Type.Object({ locale: Type.Union([Type.Literal('en'), Type.Literal('zh-CN')]) }),
    Type.Object({ locale: Type.String(), messages: Type.Record(Type.String(), Type.String()) }),
  ),
  setLogLevel: defineControlMethod('control.settings.log_level', Type.Object({ level: Type.Union(LOG_LEVELS.map((l) => Type.Literal(l))) }), Type.Object({ log_level: Nullable(Type.String()) })),
  // The trial's link checks (docs/qa-trial.md): drop the bridge link and reconnect at once, or stay offline
  // `seconds`. `dry_run` only asks whether the agent offers it.
  reconnectSession: defineControlMethod('control.session.reconnect', Type.Object({ dry_run: Type.Optional(Type.Boolean()) }), SessionAnswer, { window: false }),
  takeSessionOffline: defineControlMethod(
    'control.session.offline',
    Type.Object({
      seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_OFFLINE_S, errorMessage: `must be a whole number from 1 to ${MAX_OFFLINE_S}` })),
      dry_run: Type.Optional(Type.Boolean()),
    }),
    SessionAnswer,
    { window: false },
  ),
} satisfies ControlTable;

/** The control API's table type. */
export type ControlApi = typeof CONTROL_API;
/** A method's name in code (a key of the table). */
export type ControlKey<T extends ControlTable = ControlApi> = keyof T & string;
/** The params of method `K`. */
export type ParamsOf<K extends ControlKey<T>, T extends ControlTable = ControlApi> = Static<T[K]['params']>;
/** The result of method `K`. */
export type ResultOf<K extends ControlKey<T>, T extends ControlTable = ControlApi> = Static<T[K]['result']>;

export type PromptView = Static<typeof PromptViewSchema>;
export type Decision = Static<typeof DecisionSchema>;
export type CallRow = Static<typeof CallRowSchema>;
export type ConsentStatusView = Static<typeof ConsentStatusSchema>;
export type SignInViewData = Static<typeof SignInViewSchema>;
export type GrantView = Static<typeof GrantViewSchema>;
export type Candidate = Static<typeof CandidateSchema>;
export type FunctionView = Static<typeof FunctionViewSchema>;
export type SettingsView = Static<typeof SettingsViewSchema>;
/** One of ANSWERS. */
export type Answer = (typeof ANSWERS)[number];
/** One of LOG_LEVELS. */
export type LogLevel = (typeof LOG_LEVELS)[number];
