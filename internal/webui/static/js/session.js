// The signed-in session, shared by the shell and the pages.
import { createContext, useContext } from './lib.js';

export const SessionContext = createContext(null);
export const useSession = () => useContext(SessionContext);
