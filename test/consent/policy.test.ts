import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decidePolicy, checkAdminPolicy, type AdminRule, type PolicyDescriptor } from '../../src/consent/policy.js';

const LEVELS = ['public', 'low', 'medium', 'high', 'critical'] as const;
const RULES = [undefined, 'allow', 'ask', 'deny'] as const;
const REMEMBERED = [undefined, 'allow', 'deny'] as const;
const SAFE = { read_only: true, destructive: false, idempotent: true, physical: false };

function desc(level: (typeof LEVELS)[number], extra: Partial<PolicyDescriptor> = {}): PolicyDescriptor {
  return { id: 'test.fn', permission_level: level, confirmation: 'policy', risk: SAFE, ...extra };
}

/** The expected action for one cell of the table in docs/consent.md. */
function expected(level: string, rule: AdminRule | undefined, rem: 'allow' | 'deny' | undefined, granted: boolean): string {
  if (rule === 'deny') return 'deny:permission_denied';
  if (level === 'critical') return 'ask:once';
  if (rem === 'deny') return 'deny:user_rejected';
  if (rule === 'allow') return 'allow:policy';
  if (rem === 'allow') return 'allow:remembered';
  if (rule === 'ask') return 'ask:remember';
  if (level === 'public' || level === 'low') return 'allow:policy';
  if (level === 'medium') return granted ? 'allow:policy' : 'ask:remember';
  return 'ask:remember';
}

for (const level of LEVELS) {
  for (const rule of RULES) {
    for (const rem of REMEMBERED) {
      for (const granted of [false, true]) {
        test(`${level} × policy ${rule ?? '-'} × remembered ${rem ?? '-'} × granted ${granted}`, () => {
          const v = decidePolicy({
            descriptor: desc(level),
            resource: 'serial:/dev/ttyUSB0',
            adminPolicy: rule ? { 'test.fn': rule } : {},
            remembered: rem ? { effect: rem } : undefined,
            isResourceGranted: () => granted,
            paused: false,
          });
          const got =
            v.action === 'allow' ? `allow:${v.by}` : v.action === 'deny' ? `deny:${v.error}` : `ask:${v.rememberable ? 'remember' : 'once'}`;
          assert.equal(got, expected(level, rule, rem, granted));
        });
      }
    }
  }
}

test('pause refuses every call, even public ones and admin-allowed ones', () => {
  for (const level of LEVELS) {
    const v = decidePolicy({
      descriptor: desc(level), resource: '*', adminPolicy: { 'test.fn': 'allow' }, remembered: { effect: 'allow' },
      isResourceGranted: () => true, paused: true,
    });
    assert.equal(v.action, 'deny');
    assert.equal(v.action === 'deny' && v.error, 'paused');
  }
});

test('confirmation: always asks every time and cannot be remembered, even for a low function', () => {
  const v = decidePolicy({
    descriptor: desc('low', { confirmation: 'always' }), resource: '*', adminPolicy: {}, remembered: { effect: 'allow' },
    isResourceGranted: () => true, paused: false,
  });
  assert.deepEqual([v.action, v.action === 'ask' && v.rememberable], ['ask', false]);
});

test('a low function without risk (treated as destructive) needs the resource granted', () => {
  const base = { resource: '/srv/x', adminPolicy: {}, remembered: undefined, paused: false };
  const noRisk: PolicyDescriptor = { id: 'test.fn', permission_level: 'low', confirmation: 'policy' };
  assert.equal(decidePolicy({ ...base, descriptor: noRisk, isResourceGranted: () => false }).action, 'ask');
  assert.equal(decidePolicy({ ...base, descriptor: noRisk, isResourceGranted: () => true }).action, 'allow');
});

test('medium with confirmation: never and no grant is denied rather than asked', () => {
  const v = decidePolicy({
    descriptor: desc('medium', { confirmation: 'never' }), resource: 'serial:/dev/ttyS9', adminPolicy: {}, remembered: undefined,
    isResourceGranted: () => false, paused: false,
  });
  assert.equal(v.action === 'deny' && v.error, 'permission_denied');
});

test('the grant callback gets the function id and the resource the handler named', () => {
  const seen: string[] = [];
  decidePolicy({
    descriptor: desc('medium'), resource: 'files:/srv/out', adminPolicy: {}, remembered: undefined,
    isResourceGranted: (f, r) => (seen.push(`${f} ${r}`), true), paused: false,
  });
  assert.deepEqual(seen, ['test.fn files:/srv/out']);
});

test('checkAdminPolicy: a critical function set to allow is a config error naming the key', () => {
  const errs = checkAdminPolicy({ 'test.fn': 'allow', 'other.fn': 'allow' }, [desc('critical'), { ...desc('high'), id: 'other.fn' }]);
  assert.equal(errs.length, 1);
  assert.match(errs[0] ?? '', /policy\.test\.fn/);
  assert.deepEqual(checkAdminPolicy({ 'x.y': 'maybe' as AdminRule }, []), ['policy.x.y: must be allow, ask or deny.']);
});

test('checkAdminPolicy: allow for a function whose confirmation is always cannot take effect: a config error naming the key', () => {
  const always = { ...desc('high'), id: 'diag.confirm', confirmation: 'always' as const };
  const errs = checkAdminPolicy({ 'diag.confirm': 'allow' }, [always]);
  assert.deepEqual(errs, ['policy.diag.confirm: this function always asks for confirmation, so allow cannot take effect (use ask or deny).']);
  assert.deepEqual(checkAdminPolicy({ 'diag.confirm': 'ask' }, [always]), [], 'ask and deny are fine');
});
