import { LOCAL_PRICE, OPENAI_WIRES, openaiCompatible } from './provider.ts';

export const lmstudio = openaiCompatible({
  id: 'lmstudio',
  label: 'LM Studio',
  hosts: ['localhost', '127.0.0.1'],
  ports: [1234],
  wires: OPENAI_WIRES,
  price: LOCAL_PRICE,
  key: null,
});
