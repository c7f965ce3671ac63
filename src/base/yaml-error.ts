/**
 * A YAML parser's complaint, taken apart for a sentence in the reader's language: its position (when the
 * parser knows it) as numbers, and its own words (the first line, without the position it repeats), which
 * the yaml library only has in English.
 */
import { YAMLError } from 'yaml';

/** The parts of a parse error: line and column (1-based) when known, and the parser's detail. */
export interface YamlErrorParts {
  line?: number;
  column?: number;
  detail: string;
}

/** Takes a parse error (or anything thrown by the parser) apart. */
export function yamlErrorParts(e: unknown): YamlErrorParts {
  const first = (e instanceof Error ? e.message : String(e)).split('\n')[0]!;
  const pos = e instanceof YAMLError ? e.linePos?.[0] : undefined;
  if (!pos) return { detail: first };
  return { line: pos.line, column: pos.col, detail: first.replace(/ at line \d+, column \d+:?$/, '') };
}
