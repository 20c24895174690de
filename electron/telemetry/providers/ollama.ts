import { endpointsAt, LOCAL_PRICE, type ModelProvider } from './provider.ts';

// Ollama on the user's machine: its native API and its OpenAI-compatible /v1. Its models cost nothing.

export const ollama: ModelProvider = {
  id: 'ollama',
  label: 'Ollama',
  hosts: ['localhost', '127.0.0.1'],
  ports: [11434],
  endpoints: endpointsAt('', ['ollama-chat', 'ollama-generate', 'openai-chat', 'openai-responses']),
  price: LOCAL_PRICE,
  key: null,
};
