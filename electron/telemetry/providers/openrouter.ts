import { bearerKey, OPENAI_WIRES, openaiCompatible } from './provider.ts';

export const openrouter = openaiCompatible({
  id: 'openrouter',
  label: 'OpenRouter',
  hosts: ['openrouter.ai'],
  basePath: '/api',
  wires: OPENAI_WIRES,
  key: bearerKey('openrouter', 'OPENROUTER_API_KEY', { prefix: 'sk-or-v1-', randomChars: 64 }),
});
