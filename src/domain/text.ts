/**
 * Text in code-unit order, the same whatever the process's locale: for
 * orders that must not move with the machine (canonical JSON, a stable
 * choice among keys, an API list's order).
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
