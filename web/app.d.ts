// web/app.js is imported as text (lib/view/assets.ts): the module is its source, a string.
declare const text: string
export default text
