// The console's view layer: preact + htm (tagged templates, no build step).
// Everything a template interpolates is rendered as text; nothing here ever
// parses strings as HTML, so user-supplied strings cannot become markup.
import { h, render, Fragment, createContext } from '../vendor/preact.mjs';
import { useState, useEffect, useRef, useCallback, useMemo, useContext, useLayoutEffect } from '../vendor/hooks.mjs';
import htm from '../vendor/htm.mjs';

export const html = htm.bind(h);
export { h, render, Fragment, createContext, useState, useEffect, useRef, useCallback, useMemo, useContext, useLayoutEffect };
