/** The page's elements by id. */

/** The element `#id` of the page, typed as the caller knows it to be (the page's HTML is fixed). */
export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el as T;
}

/** An `<input>` of the page. */
export const input = (id: string): HTMLInputElement => $<HTMLInputElement>(id);
/** A `<select>` of the page. */
export const select = (id: string): HTMLSelectElement => $<HTMLSelectElement>(id);
