import { bearerKey, openaiCompatible } from './provider.ts';

export const mistral = openaiCompatible({
  id: 'mistral',
  label: 'Mistral',
  hosts: ['api.mistral.ai'],
  key: bearerKey('mistral', 'MISTRAL_API_KEY', { randomChars: 32 }),
});
