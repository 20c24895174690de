import type Database from 'better-sqlite3';

// Model calls whose response was cut short (the stream broke off, or the client gave up on it)
// and whose exchange says why. The recorder kept every byte that arrived: what never came (the
// usage in the last event, the rest of the text, a tool call it was still asking for, and so that
// call's result) is no loss of its, so `capsem check` notes these calls with their cause instead
// of reporting what they lack as findings.

/** model_calls.usage_details marks the call incomplete; any text at all in a file another tool wrote. */
const INCOMPLETE = "CASE WHEN json_valid(mc.usage_details) THEN json_type(mc.usage_details, '$.incomplete') END = 'true'";

/** The ids of the cut-short model calls, as a subquery; needs model_calls(id, usage_details, net_event_id) and net_events(event_id, error_kind). */
export const CUT_SHORT_CALL_IDS = `SELECT mc.id FROM model_calls mc JOIN net_events ne ON ne.event_id = mc.net_event_id WHERE ne.error_kind IS NOT NULL AND ${INCOMPLETE}`;

const CLIENT_GAVE_UP = 'client_canceled';

/** One note per error kind: how many responses, what cut them, and one of the recorded messages. */
export function cutShortNotes(db: Database.Database): string[] {
  const kinds = db
    .prepare(
      `SELECT ne.error_kind AS kind, count(*) AS n, min(ne.error_message) AS message
       FROM model_calls mc JOIN net_events ne ON ne.event_id = mc.net_event_id
       WHERE ne.error_kind IS NOT NULL AND ${INCOMPLETE} GROUP BY 1 ORDER BY 2 DESC, 1`,
    )
    .all() as { kind: string; n: number; message: string | null }[];
  return kinds.map(({ kind, n, message }) => {
    const responses = n === 1 ? 'model API response was' : 'model API responses were';
    const what =
      kind === CLIENT_GAVE_UP ? `${responses} abandoned by the client before ${n === 1 ? 'it' : 'they'} ended` : `${responses} cut short`;
    return `${n} ${what} (${kind}${message ? `: ${message}` : ''}): everything that arrived is recorded; what would have come after (the usage, the rest of the text, the tool calls still being asked for) never did, so nothing the recorder could keep was lost`;
  });
}
