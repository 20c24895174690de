// The title the events API gives a session without a display name: one line made from its first
// user prompt. A <user_query> is the prompt where a client wraps it in one; the
// <system-reminder> blocks a client adds are not the user's words, so they are cut out.

export const TITLE_MAX_CHARS = 80;

const USER_QUERY = /<user_query>([\s\S]*?)<\/user_query>/;
// An unclosed reminder runs to the end: a prompt cut short must not leak half of one.
const SYSTEM_REMINDER = /<system-reminder>[\s\S]*?(?:<\/system-reminder>|$)/g;

/** One line of the prompt's own words, at most 80 characters (code points); undefined when it has none. */
export function promptTitle(prompt: string): string | undefined {
  const words = (USER_QUERY.exec(prompt)?.[1] ?? prompt).replace(SYSTEM_REMINDER, ' ').replace(/\s+/gu, ' ').trim();
  if (words === '') return undefined;
  const chars = Array.from(words);
  return chars.length <= TITLE_MAX_CHARS ? words : chars.slice(0, TITLE_MAX_CHARS).join('').trimEnd();
}
