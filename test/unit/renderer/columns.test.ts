import { describe, expect, it } from 'vitest';
import { TableKindSchema } from '../../../electron/contract/appContract.ts';
import { TABLE_COLUMNS } from '../../../electron/contract/tableColumns.ts';
import { VIEW_COLUMNS } from '../../../renderer/session/columns.tsx';

describe('view columns', () => {
  it('show the time, then every column the contract lists for the view, in its order', () => {
    for (const kind of TableKindSchema.options) {
      const shown = VIEW_COLUMNS[kind].map((c) => c.key);
      const listed: readonly string[] = TABLE_COLUMNS[kind];
      expect(shown[0], kind).toBe('at');
      // Bytes sent and received share one cell.
      expect(shown.slice(1), kind).toEqual(listed.filter((c) => c !== 'bytes_received').map((c) => (c === 'bytes_sent' ? 'bytes' : c)));
    }
  });
});
