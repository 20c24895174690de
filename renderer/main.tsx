import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ConnectionProvider } from './api/ApiContext.tsx';
import { connect } from './api/capsemApi.ts';
import { App } from './app/App.tsx';
import { startFrameProbe } from './app/frameProbe.ts';
import './styles.css';

startFrameProbe();
const connection = connect();
const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root');
createRoot(root).render(
  <StrictMode>
    <ConnectionProvider value={connection}>
      <App />
    </ConnectionProvider>
  </StrictMode>,
);
