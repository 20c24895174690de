import { DEFAULT_PORTS, endpointsAt, type ModelProvider } from './provider.ts';

export const anthropic: ModelProvider = {
  id: 'anthropic',
  label: 'Anthropic',
  hosts: ['api.anthropic.com'],
  ports: DEFAULT_PORTS,
  endpoints: endpointsAt('', ['anthropic-messages']),
  price: 'anthropic',
  key: {
    name: 'anthropic',
    env: ['ANTHROPIC_API_KEY'],
    // x-api-key is the SDKs' and Claude Code's; Bearer is what OAuth-style clients send.
    headers: [
      { name: 'x-api-key', bearer: false },
      { name: 'authorization', bearer: true },
    ],
    query: null,
    standIn: { prefix: 'sk-ant-api03-', randomChars: 93, suffix: 'AA' },
  },
};
