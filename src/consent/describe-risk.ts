/**
 * Plain-language words for a function's risk, shared by the terminal prompt and the UI events.
 */
import type { PromptView } from './prompt.js';

/** E.g. "high — changes or deletes data, acts in the physical world". */
export function describeRisk(v: Pick<PromptView, 'permission_level' | 'risk'>): string {
  const notes: string[] = [];
  const r = v.risk;
  if (!r) notes.push('may change or delete data');
  else {
    if (r.destructive) notes.push('may change or delete data');
    else if (r.read_only) notes.push('reads only');
    if (r.physical) notes.push('acts in the physical world');
  }
  return notes.length ? `${v.permission_level} (${notes.join(', ')})` : v.permission_level;
}

/** "Front-desk assistant (agent)" or "an unnamed requester". */
export function describeRequester(v: Pick<PromptView, 'requester'>): string {
  const q = v.requester;
  if (!q) return 'An unnamed requester';
  return `${q.name ?? q.id ?? 'An unnamed requester'} (${q.kind})`;
}
