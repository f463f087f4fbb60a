// The app's one script: niceties over pages that work without it. Every page and action works with scripts off.
'use strict';
document.documentElement.classList.add('js');

// Copy buttons: <button data-copy="#id"> copies the value (or text) of the element it names.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const target = document.querySelector(button.getAttribute('data-copy'));
  if (!target) return;
  const text = 'value' in target ? target.value : target.textContent;
  const done = () => {
    const label = button.textContent;
    button.textContent = 'Copied';
    setTimeout(() => { button.textContent = label; }, 1500);
  };
  if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, () => {});
  else if (typeof target.select === 'function') { target.select(); document.execCommand('copy'); done(); }
});

// Forms that ask before a destructive action: <form data-confirm="Delete this customer?">.
document.addEventListener('submit', (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.getAttribute('data-confirm') : null;
  if (question && !window.confirm(question)) event.preventDefault();
});
