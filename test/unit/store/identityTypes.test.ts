import { expect, it } from 'vitest';
import type { DisplayName, SessionId } from '../../../electron/contract/ids.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// `npm test` type-checks this file: each @ts-expect-error fails the build if the compiler ever
// starts accepting a display name where a session id belongs.
it('the compiler refuses a DisplayName or plain string where a SessionId is required', () => {
  const home = tempHome();
  const name = 'co-work1' as DisplayName;
  // @ts-expect-error a display name is not a session id
  expect(() => sessionPaths(home, name)).toThrow(/resolve the name first/);
  // @ts-expect-error a plain string is not a session id either
  expect(() => sessionPaths(home, 'co-work1')).toThrow(/resolve the name first/);
  const id = '0b5c1c3e-1111-4222-8333-444455556666' as SessionId;
  // @ts-expect-error ids and names are not interchangeable the other way round either
  const asName: DisplayName = id;
  expect(asName).toBe(id);
  home.remove();
});
