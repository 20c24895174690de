import { bearerKey, openaiCompatible } from './provider.ts';

export const together = openaiCompatible({
  id: 'together',
  label: 'Together AI',
  hosts: ['api.together.xyz'],
  key: bearerKey('together', 'TOGETHER_API_KEY', { randomChars: 64 }),
});
