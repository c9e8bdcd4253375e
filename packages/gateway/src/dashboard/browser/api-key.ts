const KEY_NAME = 'bubble.dashboard.apiKey';

// The key lives in sessionStorage (this tab only, gone when it closes); if storage is refused,
// in this variable only.
let memoryKey = '';

export function readKey(): string {
  try {
    return sessionStorage.getItem(KEY_NAME) ?? '';
  } catch {
    return memoryKey;
  }
}

export function writeKey(key: string): void {
  memoryKey = key;
  try {
    if (key) sessionStorage.setItem(KEY_NAME, key);
    else sessionStorage.removeItem(KEY_NAME);
  } catch {
    // storage refused: the variable holds it
  }
}
