import { LOCAL_PRICE, OPENAI_WIRES, openaiCompatible } from './provider.ts';

export const vllm = openaiCompatible({
  id: 'vllm',
  label: 'vLLM',
  hosts: ['localhost', '127.0.0.1'],
  ports: [8000],
  wires: OPENAI_WIRES,
  price: LOCAL_PRICE,
  key: null,
});
