/** A stable pastel per owner id (FNV-1a → hue), for the pool grid. */
export function ownerColour(id: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return `hsl(${(h >>> 0) % 360} 70% 74%)`;
}
