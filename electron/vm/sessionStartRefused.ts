/** Why a session cannot start or be resumed, with the code a caller branches on. */
export class SessionStartRefused extends Error {
  override name = 'SessionStartRefused';
  constructor(
    readonly code: 'bad_params' | 'unknown_session' | 'not_resumable' | 'workspace_gone',
    message: string,
  ) {
    super(message);
  }
}
