import { bearerKey, openaiCompatible } from './provider.ts';

export const deepseek = openaiCompatible({
  id: 'deepseek',
  label: 'DeepSeek',
  hosts: ['api.deepseek.com'],
  key: bearerKey('deepseek', 'DEEPSEEK_API_KEY', { prefix: 'sk-', randomChars: 32 }),
});
