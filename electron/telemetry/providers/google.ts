import { DEFAULT_PORTS, endpointsAt, type ModelProvider } from './provider.ts';

// Google's Gemini API. Its key is named 'gemini' where keys are named (the key store, `capsem
// keys`, the policy's credentials section), as it was before the provider table.

export const google: ModelProvider = {
  id: 'google',
  label: 'Google Gemini',
  hosts: ['generativelanguage.googleapis.com'],
  ports: DEFAULT_PORTS,
  endpoints: endpointsAt('', ['gemini-generate']),
  price: 'google',
  key: {
    name: 'gemini',
    env: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    headers: [{ name: 'x-goog-api-key', bearer: false }],
    query: 'key',
    standIn: { prefix: 'AIza', randomChars: 35, suffix: '' },
  },
};
