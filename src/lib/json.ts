// Turning signed bytes into a JSON value we are willing to store: strict UTF-8, JSON, bounded
// nesting, and no strings PostgreSQL's jsonb would refuse (a NUL, a lone surrogate), so a sender's
// mistake is a 400 and never a database error.
export const MAX_JSON_DEPTH = 32;

// ignoreBOM: false is the default (a leading BOM is dropped), spelled out because workerd's typings
// require the field.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The parsed document, or undefined when the bytes are not JSON we accept. */
export function parseJsonPayload(body: Uint8Array): JsonValue | undefined {
  let value: JsonValue;
  try {
    value = JSON.parse(strictUtf8.decode(body)) as JsonValue;
  } catch {
    return undefined;
  }
  return isStorable(value) ? value : undefined;
}

function isStorableString(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000');
}

/** Walks the document without recursion, so a hostile nesting cannot overflow the stack. */
function isStorable(root: JsonValue): boolean {
  const stack: Array<{ value: JsonValue; depth: number }> = [{ value: root, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value, depth } = item;
    if (typeof value === 'string') {
      if (!isStorableString(value)) return false;
    } else if (typeof value === 'object' && value !== null) {
      if (depth >= MAX_JSON_DEPTH) return false;
      if (Array.isArray(value)) {
        for (const element of value) stack.push({ value: element, depth: depth + 1 });
      } else {
        for (const [key, element] of Object.entries(value)) {
          if (!isStorableString(key)) return false;
          stack.push({ value: element, depth: depth + 1 });
        }
      }
    }
  }
  return true;
}
