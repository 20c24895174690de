import { bearerKey, OPENAI_WIRES, openaiCompatible } from './provider.ts';

export const groq = openaiCompatible({
  id: 'groq',
  label: 'Groq',
  hosts: ['api.groq.com'],
  basePath: '/openai',
  wires: OPENAI_WIRES,
  key: bearerKey('groq', 'GROQ_API_KEY', { prefix: 'gsk_', randomChars: 52 }),
});
