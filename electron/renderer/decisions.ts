/** The remembered decisions: each with its Revoke button (control.decisions.*). */
import { t } from './catalogue.js';
import type { Decision } from './control-types.js';
import { $ } from './dom.js';
import { act, control } from './page.js';

let decisions: Decision[] = [];

function row(d: Decision): HTMLLIElement {
  const li = document.createElement('li');
  const text = document.createElement('span');
  text.className = 'grow';
  text.textContent = t(d.effect === 'allow' ? 'ui.decisions.allow' : 'ui.decisions.deny', {
    function: d.function_id,
    resource: d.resource,
    scope: t(d.scope === 'always' ? 'ui.decisions.always' : 'ui.decisions.session'),
  });
  const revoke = document.createElement('button');
  revoke.type = 'button';
  revoke.textContent = t('ui.decisions.revoke');
  revoke.addEventListener('click', () =>
    act(async () => {
      await control.revokeDecision({ id: d.id });
      await refresh();
    }),
  );
  li.append(text, revoke);
  return li;
}

/** Renders the list again (a new language). */
export function render(): void {
  $('decisions').replaceChildren(...decisions.map(row));
  $('no-decisions').hidden = decisions.length > 0;
}

/** Lists the remembered decisions again. */
export async function refresh(): Promise<void> {
  decisions = (await control.listDecisions()).decisions;
  render();
}
