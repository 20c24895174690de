import { afterEach, describe, expect, it } from 'vitest';
import { ControlClient } from '../../../electron/owner/controlClient.ts';
import { becomeOwner, type Ownership } from '../../../electron/owner/ownership.ts';
import { hostVms } from '../../../electron/owner/vmHosting.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// A CLI owner and the app host VMs one way: whichever owns the home, a client reaches the same
// vm.* methods on its control socket.

const home = tempHome();
let owned: Ownership | null = null;
afterEach(async () => {
  await owned?.close();
  home.remove();
});

describe('hostVms', () => {
  it("serves the VM host's methods on the owner's socket", async () => {
    const taken = await becomeOwner(home, { kind: 'app', command: 'test' });
    if ('holder' in taken) throw new Error('the temporary home is owned already');
    owned = taken;
    const host = hostVms(owned, home, {
      backend: () => {
        throw new Error('no VM boots in this test');
      },
    });
    const client = await ControlClient.connect(owned.server.path);
    try {
      expect(await client.call('vm.list')).toEqual([]);
      await expect(client.call('vm.stop', { id: '0b7c2f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f' })).rejects.toMatchObject({ code: 'not_running' });
    } finally {
      client.close();
    }
    expect(host.live).toEqual([]);
  });
});
