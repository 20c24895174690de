import { bearerKey, OPENAI_WIRES, openaiCompatible } from './provider.ts';

export const openai = openaiCompatible({
  id: 'openai',
  label: 'OpenAI',
  hosts: ['api.openai.com'],
  wires: OPENAI_WIRES,
  key: bearerKey('openai', 'OPENAI_API_KEY', { prefix: 'sk-proj-', randomChars: 156 }),
});
