import { isAppUrl } from './appProtocol.ts';

// Chromium asks before a page uses the camera, notifications, geolocation, HID, the clipboard and
// so on; Electron's default is to grant. The app needs none of that, so everything is refused,
// with one exception: writing to the clipboard from our own pages, which is how the terminal's
// "copy" reaches the system clipboard. Reading the clipboard stays refused (paste goes through the
// keyboard, which needs no permission). Pure (no electron import) so it is unit tested.

const GRANTED_TO_APP: ReadonlySet<string> = new Set(['clipboard-sanitized-write']);

export function permissionAllowed(permission: string, requestingUrl: string): boolean {
  return GRANTED_TO_APP.has(permission) && isAppUrl(requestingUrl);
}
